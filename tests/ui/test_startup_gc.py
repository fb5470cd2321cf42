"""Start-up objects leave the garbage collector's generations once the window has painted (issue 22)."""

from __future__ import annotations

import gc

from explorer.ui import app as app_module


def test_freeze_moves_every_live_object_out_of_the_collected_generations():
    gc.unfreeze()
    try:
        alive = [[i] for i in range(1000)]  # 1,001 tracked containers
        assert gc.get_freeze_count() == 0
        app_module.freeze_startup_objects()
        assert gc.get_freeze_count() >= 1001  # these lists, and every module, class and object of the process
        assert not any(any(o is alive for o in gc.get_objects(generation)) for generation in range(3))
    finally:
        gc.unfreeze()
    assert gc.get_freeze_count() == 0
