"""Read the 16-byte series off a yencal/gpu-bandwidth-benchmark figure (how kernels.csv's copy rows were made).

    python digitize_figure.py FIGURE.png TICK_STEP LEGEND_X0:LEGEND_X1 > points.csv

Needs Pillow (not a dependency of the project; the CSV, not this script, is what the tests read). The figure's
light-grey grid gives the axes: horizontal lines every TICK_STEP GB/s from 0, vertical lines at the decades
1e3..1e9 bytes. The points sit at the buffer sizes 2^8..2^30 the benchmark runs (memcpy_benchmark.cu), so only the
bandwidth is read: the centre of the purple (#9467bd) marker in that column, skipping the legend box. One pixel is
TICK_STEP / (grid spacing) GB/s: 1.4 GB/s on the A100 figure, 2.6 GB/s on the H100 figure (2970 x 1756 px).
Output: size_bytes, bandwidth_GB_per_s, marker height in pixels (29 where no other series overlaps).
"""

import sys

import numpy as np
from PIL import Image

path, step = sys.argv[1], float(sys.argv[2])
legend = tuple(map(int, sys.argv[3].split(":")))
im = np.asarray(Image.open(path).convert("RGB")).astype(int)
H, W, _ = im.shape
r, g, b = im[..., 0], im[..., 1], im[..., 2]
gray = (np.abs(r - g) < 4) & (np.abs(g - b) < 4) & (r > 200) & (r < 245)


def centres(idx):
    return [x.mean() for x in np.split(idx, np.flatnonzero(np.diff(idx) > 1) + 1) if len(x)]


rows = [y for y in centres(np.flatnonzero(gray.sum(1) > W * 0.4)) if 40 < y < 1560]  # without the frame
cols = [x for x in centres(np.flatnonzero(gray.sum(0) > H * 0.4)) if 300 < x < 2900]
slope, offset = np.polyfit(step * np.arange(len(rows))[::-1], rows, 1)
xslope, xoffset = np.polyfit(np.arange(3, 3 + len(cols)), cols, 1)
purple = (np.abs(r - 148) < 20) & (np.abs(g - 103) < 20) & (np.abs(b - 189) < 20)
for p in range(8, 31):
    size = 2 ** p
    x = int(round(xoffset + xslope * np.log10(size)))
    column = purple[:, x - 1:x + 2].any(1)
    if legend[0] <= x <= legend[1]:
        column[:440] = False
    idx = np.flatnonzero(column)
    run = max(np.split(idx, np.flatnonzero(np.diff(idx) > 1) + 1), key=len)
    print(f"{size},{((run[0] + run[-1]) / 2 - offset) / slope:.1f},{len(run)}")
