"""Fills every SM's shared memory with NaN before a candidate's forward, so a kernel that reads
shared memory it never wrote reads NaN, not whatever the last kernel left there (often zeros: one
published-correct kernel of the dev set passed only because of that).

A kernel of dice's own, as PTX text the driver compiles at load (no nvcc at run time, no file to
ship): one block per SM's worth of the largest dynamic shared memory a block may take, every
thread storing the NaN bit pattern over it. Shared memory is not cleared between kernels of one
context, so the candidate's next kernel finds it there. Loaded through the driver API with ctypes
before any candidate code runs.
"""

import ctypes

PTX = rb"""
.version 7.0
.target sm_52
.address_size 64

.extern .shared .align 16 .b8 dice_smem[];

.visible .entry dice_poison_shared(.param .u32 nbytes)
{
    .reg .pred %p;
    .reg .b32 %r<9>;
    ld.param.u32 %r1, [nbytes];
    mov.u32 %r2, %tid.x;
    mov.u32 %r3, %ntid.x;
    shl.b32 %r4, %r2, 2;
    shl.b32 %r5, %r3, 2;
    mov.u32 %r6, dice_smem;
    mov.u32 %r7, 0x7FC00000;
LOOP:
    setp.ge.u32 %p, %r4, %r1;
    @%p bra DONE;
    add.u32 %r8, %r6, %r4;
    st.shared.u32 [%r8], %r7;
    add.u32 %r4, %r4, %r5;
    bra LOOP;
DONE:
    ret;
}
"""

CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8


class SharedPoisonError(Exception):
    pass


class SharedPoison:
    """poison(stream handle) fills shared memory on the current device. Raises SharedPoisonError
    when the driver refuses a step (noted by the runner; the evaluation goes on)."""

    def __init__(self, device_index):
        try:
            self.cuda = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise SharedPoisonError("no libcuda: %s" % e)
        self.module, self.function = ctypes.c_void_p(), ctypes.c_void_p()
        self.check(self.cuda.cuModuleLoadData(ctypes.byref(self.module), PTX), "load")
        self.check(self.cuda.cuModuleGetFunction(ctypes.byref(self.function), self.module,
                                                 b"dice_poison_shared"), "get function")
        device = ctypes.c_int()
        self.check(self.cuda.cuDeviceGet(ctypes.byref(device), device_index), "device")
        sms, per_block, per_sm = (self.attribute(a, device) for a in (
            CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR))
        self.check(self.cuda.cuFuncSetAttribute(
            self.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, per_block),
            "set shared size")
        self.bytes = per_block
        # Enough blocks that every SM runs at least one (several fit where a block takes less
        # than an SM has).
        self.blocks = sms * max(1, per_sm // max(1, per_block) + 1)

    def attribute(self, which, device):
        value = ctypes.c_int()
        self.check(self.cuda.cuDeviceGetAttribute(ctypes.byref(value), which, device),
                   "attribute %d" % which)
        return value.value

    def check(self, rc, what):
        if rc != 0:
            raise SharedPoisonError("the driver refused to %s the shared-memory poison (CUresult "
                                    "%d)" % (what, rc))

    def poison(self, stream_handle):
        nbytes = ctypes.c_uint(self.bytes)
        params = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.byref(nbytes), ctypes.c_void_p))
        self.check(self.cuda.cuLaunchKernel(self.function, self.blocks, 1, 1, 256, 1, 1,
                                            self.bytes, ctypes.c_void_p(stream_handle), params,
                                            None), "launch")
