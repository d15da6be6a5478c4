from kernels import scale_kernel
from tritune.adapters.kernel import KernelInfo


def info_of():
    return KernelInfo.of(scale_kernel)
