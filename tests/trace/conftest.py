"""The trace tests' shared fixtures."""
import pytest


@pytest.fixture
def needs_cuda():
    """The GPU tests' guard: skipped where torch sees no CUDA GPU."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
