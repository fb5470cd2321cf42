"""Systolic cycle counts against the cycle-level simulator SCALE-Sim (issue 21: OS had a weight-loading phase it
does not have, 25-41 % too many cycles). Hand-computed: folds x (stream + [R if WS/IS] + R + C - 2) - 1."""

import pytest

from explorer.core.analysis.tiling import systolic_mapping


@pytest.mark.parametrize("m, n, k, rows, cols, cycles", [
    (64, 64, 64, 32, 32, 503),  # 4 folds x (64 + 32 + 32 - 2) - 1
    (100, 100, 100, 32, 32, 2591),  # 16 folds x (100 + 62) - 1
    (64, 64, 64, 128, 128, 317),  # 1 fold x (64 + 254) - 1
])
def test_output_stationary_cycles_match_scale_sim(m, n, k, rows, cols, cycles):
    assert systolic_mapping(m, n, k, rows, cols, "os").cycles == cycles


def test_weight_and_input_stationary_load_their_tile():
    # WS 64^3 on 32x32: K -> rows, N -> cols, 4 folds x (64 + 32 + 32 + 32 - 2) - 1
    assert systolic_mapping(64, 64, 64, 32, 32, "ws").cycles == 4 * 158 - 1
    # IS 100^3 on 32x32: 16 folds x (100 + 32 + 62) - 1
    assert systolic_mapping(100, 100, 100, 32, 32, "is").cycles == 16 * 194 - 1
    # folds spread over 4 arrays: one round of 4 folds
    assert systolic_mapping(64, 64, 64, 32, 32, "os", units=4).cycles == 125
