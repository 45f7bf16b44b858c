"""Communication time, exposed communication and overlap from intervals (kernels/communication.py)."""
import numpy as np
import pytest

from sysprof.profiler_core.kernels.communication import covered_ns, merged


def brute_force_exposed(comm: list[tuple[int, int]], compute: list[tuple[int, int]]) -> int:
    """Nanosecond by nanosecond: inside some communication interval and inside no compute interval."""
    end = max(e for _, e in comm + compute)
    timeline = np.zeros(end, dtype=np.int8)
    for start, stop in comm:
        timeline[start:stop] |= 1
    for start, stop in compute:
        timeline[start:stop] |= 2
    return int((timeline == 1).sum())


def exposed(comm: list[tuple[int, int]], compute: list[tuple[int, int]]) -> int:
    comm_s, comm_e = merged(*map(np.array, zip(*comm)))
    comp_s, comp_e = merged(*map(np.array, zip(*compute)))
    return int((comm_e - comm_s).sum()) - covered_ns(comm_s, comm_e, comp_s, comp_e)


def test_merged_joins_overlapping_and_nested_intervals():
    starts, ends = merged(np.array([5, 0, 2, 20, 21]), np.array([8, 3, 4, 25, 22]))
    assert starts.tolist() == [0, 5, 20] and ends.tolist() == [4, 8, 25]


@pytest.mark.parametrize("comm, compute, expected", [
    ([(0, 10)], [(20, 30)], 10),           # nothing hides it
    ([(0, 10)], [(0, 10)], 0),             # wholly hidden
    ([(0, 10)], [(2, 4), (6, 8)], 6),      # two holes
    ([(0, 10), (5, 15)], [(12, 40)], 12),  # two channels at once count once
    ([(10, 20)], [(0, 12), (18, 30)], 6),  # covered at both ends
])
def test_exposed_time_is_what_no_compute_kernel_covers(comm, compute, expected):
    assert exposed(comm, compute) == expected == brute_force_exposed(comm, compute)


def test_exposed_time_matches_a_timeline_on_many_random_intervals():
    rng = np.random.default_rng(7)
    for _ in range(50):
        comm = [(int(s), int(s + d)) for s, d in zip(rng.integers(0, 900, 12), rng.integers(1, 80, 12))]
        compute = [(int(s), int(s + d)) for s, d in zip(rng.integers(0, 900, 30), rng.integers(1, 40, 30))]
        assert exposed(comm, compute) == brute_force_exposed(comm, compute)
