"""Drawing helpers: exact pixels on raw arrays (no compression involved)."""

from __future__ import annotations

import numpy as np
import pytest

from paravt.errors import VideoError
from paravt.video import draw


def test_barcode_round_trips_every_12_bit_pattern_edge() -> None:
    for index in (0, 1, 2, 1365, 2730, 4094, 4095):
        img = draw.solid(48, 64, draw.COLORS["green"])
        draw.barcode(img, index)
        assert draw.read_barcode(img) == index


def test_barcode_writes_msb_first_in_the_top_strip_only() -> None:
    img = draw.solid(48, 64, (100, 100, 100))
    draw.barcode(img, 0b100000000001)
    # 64 // 12 = 5 px blocks; strip height max(8, 48 // 8) = 8 rows
    assert img[0, 0].tolist() == [255, 255, 255]  # bit 11 (MSB) = 1
    assert img[0, 5].tolist() == [0, 0, 0]  # bit 10 = 0
    assert img[7, 57].tolist() == [255, 255, 255]  # LSB block spans columns 55..59
    assert img[8, 0].tolist() == [100, 100, 100]  # row 8 untouched
    assert img[0, 62].tolist() == [100, 100, 100]  # columns past 12 blocks untouched


def test_barcode_rejects_index_that_does_not_fit_and_too_narrow_images() -> None:
    img = draw.solid(48, 64, (0, 0, 0))
    with pytest.raises(VideoError, match="does not fit in 12 bits"):
        draw.barcode(img, 4096)
    with pytest.raises(VideoError, match="too narrow"):
        draw.barcode(draw.solid(8, 30, (0, 0, 0)), 1)


def test_digit_one_lights_only_the_right_segments() -> None:
    img = draw.solid(60, 40, (0, 0, 0))
    draw.draw_digit(img, 1, 0, 0, 40, 60, (255, 0, 0))
    # stroke = min(40, 60) // 5 = 8 px: segments b and c are columns 32..39
    assert (img[:, 32:40] == [255, 0, 0]).all()
    assert (img[:, :32] == 0).all()


def test_digit_eight_differs_from_zero_only_by_the_middle_bar() -> None:
    zero, eight = draw.solid(60, 40, (0, 0, 0)), draw.solid(60, 40, (0, 0, 0))
    draw.draw_digit(zero, 0, 0, 0, 40, 60, (255, 255, 255))
    draw.draw_digit(eight, 8, 0, 0, 40, 60, (255, 255, 255))
    diff_rows = np.nonzero((zero != eight).any(axis=(1, 2)))[0]
    # middle bar: top row (60 - 8) // 2 = 26, 8 rows tall
    assert diff_rows.tolist() == list(range(26, 34))


def test_draw_number_places_digits_left_to_right() -> None:
    img = draw.solid(40, 90, (0, 0, 0))
    draw.draw_number(img, 17, (0, 0, 90, 40), (255, 255, 255))
    # digit width d = 90 / 2.25 = 40; "1" lights only its right stroke (cols 32..39),
    # "7" starts at 50 and has a top bar over its whole width
    assert (img[:, :32] == 0).all()
    assert (img[0, 50:90] == 255).all()
    with pytest.raises(VideoError, match="negative"):
        draw.draw_number(img, -3, (0, 0, 90, 40), (255, 255, 255))


def test_fill_rect_and_circle_clip_to_the_image() -> None:
    img = draw.solid(10, 10, (0, 0, 0))
    draw.fill_rect(img, -5, 8, 3, 20, (9, 9, 9))
    assert int((img[..., 0] == 9).sum()) == 3 * 2  # columns 0..2, rows 8..9
    draw.fill_circle(img, 0, 0, 2, (7, 7, 7))
    # integer points with x, y ≥ 0 and x² + y² ≤ 4: (0,0) (1,0) (2,0) (0,1) (1,1) (0,2)
    assert int((img[..., 0] == 7).sum()) == 6


def test_named_colors_are_recovered_after_moderate_noise() -> None:
    rng = np.random.default_rng(0)
    for name, rgb in draw.COLORS.items():
        noisy = np.clip(np.asarray(rgb) + rng.integers(-25, 26, size=3), 0, 255)
        assert draw.nearest_color(noisy) == name
