"""A minimal ctypes binding to libshardcomm, for framework authors: the communicator from
the launcher's environment, allreduce, allgather and reduce_scatter, and the gradient
reducer, on numpy arrays or torch CPU tensors. An example to read and adapt, not a
complete binding; include/shardcomm/*.h say what each call does.

The library is $SHARDCOMM_LIBRARY, else build/libshardcomm.so of this checkout, else
libshardcomm.so from the loader's path. Calls are blocking (req NULL) and take host
memory only (stream NULL). A failed call raises shardcomm.Error."""
import ctypes as C
import os


def _load():
    path = os.environ.get("SHARDCOMM_LIBRARY")
    if not path:
        here = os.path.dirname(os.path.abspath(__file__))
        path = os.path.join(here, "..", "..", "build", "libshardcomm.so")
        if not os.path.exists(path):
            path = "libshardcomm.so"
    return C.CDLL(path)


_lib = _load()

# sc_dtype_t (types.h) by the dtype's name, which numpy and torch share.
DTYPES = {"float32": 0, "float64": 1, "float16": 2, "bfloat16": 3, "int8": 4, "uint8": 5,
          "int32": 6, "int64": 7}
SUM, PROD, MIN, MAX, AVG = range(5)  # sc_op_t


class _GradDesc(C.Structure):  # sc_grad_desc_t (reducer.h)
    _fields_ = [("count", C.c_size_t), ("dtype", C.c_int), ("name", C.c_char_p)]


class _ReducerConfig(C.Structure):  # sc_reducer_config_t (reducer.h)
    _fields_ = [("size", C.c_size_t), ("bucket_cap_bytes", C.c_size_t),
                ("first_bucket_bytes", C.c_size_t), ("gradient_as_bucket_view", C.c_int),
                ("find_unused", C.c_int), ("autotune", C.c_int), ("prediv", C.c_double),
                ("hook", C.c_void_p), ("stream", C.c_void_p)]


_P, _N, _I = C.c_void_p, C.c_size_t, C.c_int
for _name, _res, _args in [
        ("sc_status_string", C.c_char_p, [_I]),
        ("sc_last_error", C.c_char_p, []),
        ("sc_comm_init_from_env", _I, [C.POINTER(_P)]),
        ("sc_comm_destroy", _I, [_P]),
        ("sc_comm_rank", _I, [_P]),
        ("sc_comm_size", _I, [_P]),
        ("sc_allreduce", _I, [_P, _P, _N, _I, _I, _P, _P, _P]),
        ("sc_allgather", _I, [_P, _P, _N, _I, _P, _P, _P]),
        ("sc_reduce_scatter", _I, [_P, _P, _N, _I, _I, _P, _P, _P]),
        ("sc_reducer_create", _I, [_P, C.POINTER(_GradDesc), _I,
                                   C.POINTER(_ReducerConfig), C.POINTER(_P)]),
        ("sc_reducer_mark_ready", _I, [_P, _I, _P]),
        ("sc_reducer_grad_view", _P, [_P, _I]),
        ("sc_reducer_finalize", _I, [_P]),
        ("sc_reducer_set_sync", _I, [_P, _I]),
        ("sc_reducer_destroy", _I, [_P])]:
    _f = getattr(_lib, _name)
    _f.restype, _f.argtypes = _res, _args


class Error(RuntimeError):
    """A shardcomm call failed: status is its sc_status_string ("SC_ERR_MISMATCH"),
    message its sc_last_error sentence."""

    def __init__(self, call, status):
        # sc_last_error first: its text lasts until the next shardcomm call.
        self.message = _lib.sc_last_error().decode(errors="replace")
        self.status = _lib.sc_status_string(status).decode()
        super().__init__("%s: %s: %s" % (call, self.status, self.message))


def _check(call, status):
    if status != 0:
        raise Error(call, status)


def _is_torch(a):
    return hasattr(a, "data_ptr")


def _count_dtype(a):
    """Element count and sc_dtype_t of a numpy array or a torch tensor."""
    name = str(a.dtype).replace("torch.", "")
    if name not in DTYPES:
        raise TypeError("dtype %s: shardcomm takes %s" % (name, ", ".join(DTYPES)))
    return (a.numel() if _is_torch(a) else a.size), DTYPES[name]


def _buffer(a):
    """(address, element count, sc_dtype_t) of a numpy array or a torch CPU tensor.
    The library reads count contiguous elements from the address, so a strided view
    would be read wrong: it is refused here."""
    if _is_torch(a):
        if a.device.type != "cpu":
            raise ValueError("a tensor on %s: this binding takes CPU tensors only"
                             % a.device)
        contiguous, addr = a.is_contiguous(), a.data_ptr()
    else:
        contiguous, addr = a.flags.c_contiguous, a.ctypes.data
    if not contiguous:
        raise ValueError("a non-contiguous %s (shape %s): shardcomm reads contiguous "
                         "memory; pass .contiguous() or numpy.ascontiguousarray()"
                         % (type(a).__name__, tuple(a.shape)))
    return (addr,) + _count_dtype(a)


def _pair(send, recv, ratio):
    """send's and recv's buffers, of one dtype and counts in the ratio ratio[0]:ratio[1]
    (the library cannot see their lengths: a short one would be overrun)."""
    (s, ns, ts), (r, nr, tr) = _buffer(send), _buffer(recv)
    if ts != tr or ns * ratio[1] != nr * ratio[0]:
        raise ValueError("send holds %d elements of %s and recv %d of %s: expected "
                         "one dtype and counts %d:%d"
                         % (ns, send.dtype, nr, recv.dtype, *ratio))
    return s, r, ns, nr, ts


class Comm:
    """A communicator over the ranks a launcher started (scrun, torchrun, mpirun, srun)."""

    def __init__(self):
        self.handle = C.c_void_p()
        _check("sc_comm_init_from_env", _lib.sc_comm_init_from_env(C.byref(self.handle)))
        self.rank = _lib.sc_comm_rank(self.handle)
        self.size = _lib.sc_comm_size(self.handle)

    def allreduce(self, send, recv, op=SUM):
        """recv = op over ranks of send (same count; send may be recv)."""
        s, r, n, _, t = _pair(send, recv, (1, 1))
        _check("sc_allreduce", _lib.sc_allreduce(s, r, n, t, op, self.handle, None, None))

    def allgather(self, send, recv):
        """recv (size x send's count) = every rank's send in rank order."""
        s, r, n, _, t = _pair(send, recv, (1, self.size))
        _check("sc_allgather", _lib.sc_allgather(s, r, n, t, self.handle, None, None))

    def reduce_scatter(self, send, recv, op=SUM):
        """recv = op over ranks of block `rank` of send (size x recv's count)."""
        s, r, _, n, t = _pair(send, recv, (self.size, 1))
        _check("sc_reduce_scatter",
               _lib.sc_reduce_scatter(s, r, n, t, op, self.handle, None, None))

    def destroy(self):
        """Destroy every reducer on it first."""
        _check("sc_comm_destroy", _lib.sc_comm_destroy(self.handle))
        self.handle = None


class Reducer:
    """The gradient reducer (reducer.h) for params, numpy arrays or torch CPU tensors in
    registration order (the forward's); each gradient has its parameter's shape and dtype.
    Collective: every rank registers the same list and settings."""

    def __init__(self, comm, params, names=None, gradient_as_bucket_view=False,
                 bucket_cap_bytes=0, prediv=0.0):
        self.params, self.views = list(params), gradient_as_bucket_view
        names = names or ["param%d" % i for i in range(len(self.params))]
        descs = (_GradDesc * len(self.params))()
        for d, p, name in zip(descs, self.params, names):
            d.count, d.dtype = _count_dtype(p)
            d.name = name.encode()
        # size is what the library checks the layout by: a struct that does not match
        # reducer.h is refused (SC_ERR_INVALID_ARG), not misread.
        config = _ReducerConfig(size=C.sizeof(_ReducerConfig),
                                gradient_as_bucket_view=int(gradient_as_bucket_view),
                                bucket_cap_bytes=bucket_cap_bytes, prediv=prediv)
        self.handle = C.c_void_p()
        _check("sc_reducer_create",
               _lib.sc_reducer_create(comm.handle, descs, len(descs), C.byref(config),
                                      C.byref(self.handle)))
        self._marked = []  # copy mode: the library writes the results there until finalize

    def grad_view(self, i):
        """Gradient i's view in bucket memory (gradient_as_bucket_view), a tensor or array
        shaped like its parameter that aliases the bucket. A finalize that rebuilds the
        buckets moves the views at the reducer's next call: take them again every
        iteration, before writing to them, and drop them before destroy."""
        if not self.views:
            raise ValueError("grad_view needs gradient_as_bucket_view=True")
        p = self.params[i]
        addr = _lib.sc_reducer_grad_view(self.handle, i)
        if _is_torch(p):
            import torch
            if not addr or p.numel() == 0:
                return torch.empty_like(p)
            raw = (C.c_char * (p.numel() * p.element_size())).from_address(addr)
            return torch.frombuffer(raw, dtype=p.dtype).view(p.shape)
        import numpy
        if not addr or p.size == 0:
            return numpy.empty_like(p)
        raw = (C.c_char * p.nbytes).from_address(addr)
        return numpy.frombuffer(raw, dtype=p.dtype).reshape(p.shape)

    def mark_ready(self, i, grad=None):
        """Gradient i is ready: in its view (grad None) or in grad, which the library reads
        and then writes the result to until finalize returns."""
        addr = None
        if grad is not None:
            addr, count, dtype = _buffer(grad)
            if (count, dtype) != _count_dtype(self.params[i]):
                raise ValueError("gradient %d: %d elements of %s, its parameter has %s"
                                 % (i, count, grad.dtype, tuple(self.params[i].shape)))
            self._marked.append(grad)
        _check("sc_reducer_mark_ready", _lib.sc_reducer_mark_ready(self.handle, i, addr))

    def finalize(self):
        """Waits for every bucket: the averaged gradients are in the views or the grads."""
        try:
            _check("sc_reducer_finalize", _lib.sc_reducer_finalize(self.handle))
        finally:
            self._marked = []

    def set_sync(self, sync):
        """False: the next iterations accumulate locally until one with True reduces."""
        _check("sc_reducer_set_sync", _lib.sc_reducer_set_sync(self.handle, int(sync)))

    def destroy(self):
        _check("sc_reducer_destroy", _lib.sc_reducer_destroy(self.handle))
        self.handle = None
