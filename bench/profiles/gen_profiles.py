#!/usr/bin/env python3
"""Writes the gradient profiles of sc-bench reducer (bench/profiles/*.txt): one line per
parameter tensor, `name count dtype`, in registration order (what model.parameters()
lists), computed from the architectures' definitions. Plain python3, no torch.

usage: gen_profiles.py [OUTDIR]   (default: this script's directory)

Prints each profile's tensor and parameter counts next to the published ones and exits
non-zero when one differs.
"""
import os
import sys


def resnet50():
    """torchvision.models.resnet50: conv weights (no bias), BatchNorm weight and bias as
    two tensors (running stats are buffers, not parameters), fc weight and bias."""
    t = []

    def conv(name, cin, cout, k):
        t.append((name + ".weight", cout * cin * k * k))

    def bn(name, c):
        t.append((name + ".weight", c))
        t.append((name + ".bias", c))

    conv("conv1", 3, 64, 7)
    bn("bn1", 64)
    inplanes = 64
    for layer, (planes, blocks) in enumerate([(64, 3), (128, 4), (256, 6), (512, 3)], 1):
        for b in range(blocks):
            p = "layer%d.%d." % (layer, b)
            # Bottleneck: 1x1 reduce, 3x3 (stride on the first block), 1x1 expand x4.
            conv(p + "conv1", inplanes, planes, 1)
            bn(p + "bn1", planes)
            conv(p + "conv2", planes, planes, 3)
            bn(p + "bn2", planes)
            conv(p + "conv3", planes, planes * 4, 1)
            bn(p + "bn3", planes * 4)
            if b == 0:  # the projection shortcut, registered after bn3
                conv(p + "downsample.0", inplanes, planes * 4, 1)
                bn(p + "downsample.1", planes * 4)
            inplanes = planes * 4
    t.append(("fc.weight", 1000 * 2048))
    t.append(("fc.bias", 1000))
    return t


def bert_base():
    """Hugging Face BertModel for bert-base-uncased: embeddings, 12 encoder layers and the
    pooler (dense 768x768 + tanh); no pre-training heads (MLM/NSP)."""
    d, ff, vocab, pos, types, layers = 768, 3072, 30522, 512, 2, 12
    t = [("embeddings.word_embeddings.weight", vocab * d),
         ("embeddings.position_embeddings.weight", pos * d),
         ("embeddings.token_type_embeddings.weight", types * d),
         ("embeddings.LayerNorm.weight", d),
         ("embeddings.LayerNorm.bias", d)]
    for i in range(layers):
        p = "encoder.layer.%d." % i
        for name, cin, cout in [("attention.self.query", d, d), ("attention.self.key", d, d),
                                ("attention.self.value", d, d),
                                ("attention.output.dense", d, d)]:
            t.append((p + name + ".weight", cin * cout))
            t.append((p + name + ".bias", cout))
        t.append((p + "attention.output.LayerNorm.weight", d))
        t.append((p + "attention.output.LayerNorm.bias", d))
        t.append((p + "intermediate.dense.weight", d * ff))
        t.append((p + "intermediate.dense.bias", ff))
        t.append((p + "output.dense.weight", ff * d))
        t.append((p + "output.dense.bias", d))
        t.append((p + "output.LayerNorm.weight", d))
        t.append((p + "output.LayerNorm.bias", d))
    t.append(("pooler.dense.weight", d * d))
    t.append(("pooler.dense.bias", d))
    return t


def gpt(layers, d, vocab, ctx):
    """Hugging Face GPT2Model layout (pre-LayerNorm blocks, fused qkv projection c_attn,
    4d MLP, final ln_f). The LM head is tied to wte, so wte is one tensor."""
    t = [("wte.weight", vocab * d), ("wpe.weight", ctx * d)]
    for i in range(layers):
        p = "h.%d." % i
        t.append((p + "ln_1.weight", d))
        t.append((p + "ln_1.bias", d))
        t.append((p + "attn.c_attn.weight", d * 3 * d))
        t.append((p + "attn.c_attn.bias", 3 * d))
        t.append((p + "attn.c_proj.weight", d * d))
        t.append((p + "attn.c_proj.bias", d))
        t.append((p + "ln_2.weight", d))
        t.append((p + "ln_2.bias", d))
        t.append((p + "mlp.c_fc.weight", d * 4 * d))
        t.append((p + "mlp.c_fc.bias", 4 * d))
        t.append((p + "mlp.c_proj.weight", 4 * d * d))
        t.append((p + "mlp.c_proj.bias", d))
    t.append(("ln_f.weight", d))
    t.append(("ln_f.bias", d))
    return t


# file, generator, description, published tensor count, published parameter count.
PROFILES = [
    ("resnet50.txt", resnet50,
     "ResNet-50 (torchvision resnet50, ImageNet 1000 classes)", 161, 25557032),
    ("bert_base.txt", bert_base,
     "BERT-base (bert-base-uncased as Hugging Face BertModel: embeddings, 12 layers, "
     "pooler; no MLM/NSP heads)", 199, 109482240),
    ("gpt2_124m.txt", lambda: gpt(12, 768, 50257, 1024),
     "GPT-2 124M (Hugging Face GPT2Model: 12 layers, d_model 768, 12 heads, vocab 50257, "
     "context 1024; LM head tied to wte, counted once)", 148, 124439808),
    # GPT-3 XL's shape (Brown et al. 2020, table 2.1) in GPT-2's layout with GPT-2's
    # vocabulary (50257, unpadded). The same shapes without the q/k/v biases are
    # EleutherAI's gpt-neo-1.3B, 1,315,575,808 parameters: 24 x 3 x 2048 fewer.
    ("gpt_1p3b.txt", lambda: gpt(24, 2048, 50257, 2048),
     "GPT 1.3B (GPT-3 XL shape: 24 layers, d_model 2048, 16 heads, context 2048, vocab "
     "50257 unpadded, GPT-2 layout; LM head tied to wte, counted once)", 292,
     1315575808 + 24 * 3 * 2048),
]


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    ok = True
    print("%-14s %8s %8s %15s %15s %s" % ("profile", "tensors", "expected", "parameters",
                                          "expected", "float32 MiB"))
    for fname, gen, desc, want_n, want_p in PROFILES:
        tensors = gen()
        total = sum(c for _, c in tensors)
        with open(os.path.join(outdir, fname), "w") as f:
            f.write("# %s\n" % desc)
            f.write("# %d tensors, %d parameters, float32 gradients; registration "
                    "(forward) order\n" % (len(tensors), total))
            f.write("# generated by bench/profiles/gen_profiles.py; columns: name count "
                    "dtype\n")
            for name, count in tensors:
                f.write("%s %d float32\n" % (name, count))
        good = len(tensors) == want_n and total == want_p
        ok = ok and good
        print("%-14s %8d %8d %15s %15s %11.1f %s" % (
            fname, len(tensors), want_n, format(total, ","), format(want_p, ","),
            total * 4 / 2**20, "ok" if good else "MISMATCH"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
