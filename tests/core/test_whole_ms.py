"""Seconds to the replicated milliseconds: rounded up, never by float noise."""

from __future__ import annotations

from datetime import UTC, datetime

from lazily_queue.core.expiry import ttl_ms, whole_ms
from lazily_queue.core.push_options import PushOptions


def test_whole_ms_rounds_up_but_not_float_noise() -> None:
    seconds = 9 * 0.001  # 9 ms as a fixture scale gives it
    assert seconds * 1000 > 9  # the float noise the conversion must not round up
    assert whole_ms(seconds) == 9
    assert whole_ms(0.0091) == 10
    assert whole_ms(0.3) == 300
    assert whole_ms(1e-7) == 1


def test_every_option_converts_through_it() -> None:
    seconds = 9 * 0.001
    options = PushOptions.checked(ttl=seconds, delay=seconds)
    assert (options.ttl_ms, options.delay_ms) == (9, 9)
    assert ttl_ms(seconds) == 9
    at = datetime.fromtimestamp(1_700_000_000.009, UTC)
    assert PushOptions.checked(not_before=at).not_before_ms == 1_700_000_000_009
