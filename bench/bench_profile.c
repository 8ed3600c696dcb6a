/* Reading the gradient profiles of sc-bench reducer: `name count dtype` per line. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_profile.h"

void sc_bench_profile_free(sc_bench_profile_t *profile)
{
    if (!profile)
        return;
    for (int i = 0; i < profile->ntensors; i++)
        free(profile->tensors[i].name);
    free(profile->tensors);
    profile->tensors = NULL;
    profile->ntensors = 0;
}

/* Parses one tensor line into *t (name allocated). Returns 0, or 1 with a sentence in
 * err. */
static int sc_bench_profile_line(char *line, sc_bench_tensor_t *t, char *err,
                                 size_t errlen)
{
    char *save = NULL, *name, *count, *dtype, *extra, *end;
    unsigned long long n;

    name = strtok_r(line, " \t", &save);
    count = strtok_r(NULL, " \t", &save);
    dtype = strtok_r(NULL, " \t", &save);
    extra = strtok_r(NULL, " \t", &save);
    if (!dtype || extra) {
        snprintf(err, errlen, "expected 3 fields 'name count dtype'");
        return 1;
    }
    errno = 0;
    n = strtoull(count, &end, 10);
    if (errno || *end != '\0' || *count < '0' || *count > '9' ||
        n > (unsigned long long)(SIZE_MAX / 8)) {
        snprintf(err, errlen, "invalid element count '%s'", count);
        return 1;
    }
    if (sc_dtype_from_name(dtype, &t->dtype) != SC_SUCCESS ||
        (t->dtype != SC_FLOAT32 && t->dtype != SC_FLOAT16 && t->dtype != SC_BFLOAT16)) {
        snprintf(err, errlen, "dtype '%s': gradients are float32, float16 or bfloat16",
                 dtype);
        return 1;
    }
    t->count = (size_t)n;
    t->name = strdup(name);
    if (!t->name) {
        snprintf(err, errlen, "out of memory");
        return 1;
    }
    return 0;
}

/* Where a profile named without a directory is looked for after the working directory:
 * the installed ones (SC_BENCH_PROFILES_INSTALLED, relative to the directory of
 * sc-bench's executable unless absolute) and the source tree's (for the build tree). */
static int sc_bench_profile_dirs(char dirs[2][4096])
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    int ndirs = 0;
    const char *installed = SC_BENCH_PROFILES_INSTALLED;

    if (installed[0] == '/') {
        snprintf(dirs[ndirs++], 4096, "%s", installed);
    } else if (n > 0) {
        char *slash;
        exe[n] = '\0';
        slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            snprintf(dirs[ndirs++], 4096, "%.2000s/%.2000s", exe, installed);
        }
    }
    snprintf(dirs[ndirs++], 4096, "%s", SC_BENCH_PROFILES_SOURCE);
    return ndirs;
}

/* The file of profile `name`: name itself where it is a path (it has a '/') or a file in
 * the working directory, else name or name.txt in the profile directories. 0 with the path in found, or 1 with
 * a sentence in err. */
static int sc_bench_profile_find(const char *name, char *found, size_t len, char *err,
                                 size_t errlen)
{
    char dirs[2][4096];
    int ndirs;

    if (strchr(name, '/') || access(name, F_OK) == 0) {
        snprintf(found, len, "%s", name);
        return 0;
    }
    ndirs = sc_bench_profile_dirs(dirs);
    for (int d = 0; d < ndirs; d++) {
        for (int ext = 0; ext < 2; ext++) {
            snprintf(found, len, "%.4000s/%.1000s%s", dirs[d], name, ext ? ".txt" : "");
            if (access(found, F_OK) == 0)
                return 0;
        }
    }
    snprintf(err, errlen, "cannot read the profile %s: no such file here, and no %s or "
             "%s.txt in %s%s%s (the profiles given: resnet50, bert_base, gpt2_124m, "
             "gpt_1p3b)", name, name, name, dirs[0], ndirs > 1 ? " or " : "",
             ndirs > 1 ? dirs[1] : "");
    return 1;
}

sc_status_t sc_bench_profile_load(const char *name, sc_bench_profile_t *profile,
                                  char *err, size_t errlen)
{
    sc_bench_profile_t p = {NULL, 0, 0, 0};
    sc_status_t status = SC_ERR_INVALID_ARG;
    char *line = NULL, why[256];
    char path[8192];
    size_t cap = 0;
    int lineno = 0, alloc = 0;
    ssize_t len;
    FILE *f;

    if (sc_bench_profile_find(name, path, sizeof(path), err, errlen))
        return SC_ERR_SYSTEM;
    f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot read the profile %s: %s", path, strerror(errno));
        return SC_ERR_SYSTEM;
    }
    while ((len = getline(&line, &cap, f)) != -1) {
        char *s = line;

        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        while (*s == ' ' || *s == '\t')
            s++;
        if (*s == '\0' || *s == '#')
            continue;
        if (p.ntensors == alloc) {
            int more = alloc ? 2 * alloc : 256;
            sc_bench_tensor_t *t = realloc(p.tensors, (size_t)more * sizeof(*t));

            if (!t) {
                snprintf(err, errlen, "%s: out of memory", path);
                goto err_free;
            }
            p.tensors = t;
            alloc = more;
        }
        if (sc_bench_profile_line(s, &p.tensors[p.ntensors], why, sizeof(why))) {
            snprintf(err, errlen, "%s:%d: %s", path, lineno, why);
            goto err_free;
        }
        /* Twice the bytes must stay a size: the gradients and their buckets, which the
         * memory check counts (a wrapped sum passed it as a few bytes). */
        size_t bytes = p.tensors[p.ntensors].count * sc_dtype_size(p.tensors[p.ntensors].dtype);
        p.ntensors++;
        if (bytes > SIZE_MAX / 2 - p.bytes) {
            snprintf(err, errlen, "%s:%d: the gradients up to this line hold more than "
                                  "the address space", path, lineno);
            goto err_free;
        }
        p.count += p.tensors[p.ntensors - 1].count;
        p.bytes += bytes;
    }
    if (ferror(f)) {
        snprintf(err, errlen, "cannot read the profile %s: %s", path, strerror(errno));
        status = SC_ERR_SYSTEM;
        goto err_free;
    }
    if (p.ntensors == 0) {
        snprintf(err, errlen, "%s: no gradient in the profile (expected lines 'name count "
                              "dtype')", path);
        goto err_free;
    }
    free(line);
    fclose(f);
    *profile = p;
    return SC_SUCCESS;

err_free:
    sc_bench_profile_free(&p);
    free(line);
    fclose(f);
    return status;
}
