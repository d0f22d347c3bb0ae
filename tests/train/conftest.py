"""Train tests share the two cores with everything else: one torch thread each."""

import pytest


@pytest.fixture(autouse=True, scope="session")
def _one_thread():
    import torch

    torch.set_num_threads(1)
