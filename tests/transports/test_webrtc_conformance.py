"""The generic LinkStream contract and link-authentication tests, run over WebRTC.

The test functions are the ones every other transport runs (``test_channels``,
``test_authentication``); only the ``address`` fixture differs: a WebRTC room on a
fresh signaling server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from lazily_transports.webrtc.signaling import SignalingServer
from test_authentication import (
    test_a_stranger_gets_no_proof_of_the_acceptor,
    test_replayed_handshake_and_proof_are_refused,
    test_silent_peer_is_dropped_after_the_handshake_timeout,
    test_the_accepting_side_tells_the_dialer_why,
    test_unauthenticated_links_need_both_sides_to_opt_in,
    test_wrong_secret_is_refused_before_any_payload,
)
from test_channels import (
    test_backpressure_blocks_the_sender_and_loses_nothing,
    test_channel_is_an_anyio_object_stream,
    test_clean_close_delivers_queued_frames_then_end_of_stream,
    test_closing_the_stream_closes_its_channel,
    test_large_frames_in_both_directions,
    test_local_close_makes_further_use_a_closed_resource_error,
    test_many_frames_arrive_whole_and_in_order,
    test_receive_nowait_and_readiness,
    test_round_trip_and_negotiated_attributes,
    test_send_above_negotiated_ceiling_raises_clearly,
    test_send_accepts_bytes_like_and_rejects_text,
    test_sending_to_a_closed_peer_eventually_breaks,
    test_the_raw_channel_holds_only_what_its_transport_needs,
)

pytestmark = pytest.mark.timeout(60)

__all__ = [
    "test_a_stranger_gets_no_proof_of_the_acceptor",
    "test_backpressure_blocks_the_sender_and_loses_nothing",
    "test_channel_is_an_anyio_object_stream",
    "test_clean_close_delivers_queued_frames_then_end_of_stream",
    "test_closing_the_stream_closes_its_channel",
    "test_large_frames_in_both_directions",
    "test_local_close_makes_further_use_a_closed_resource_error",
    "test_many_frames_arrive_whole_and_in_order",
    "test_receive_nowait_and_readiness",
    "test_replayed_handshake_and_proof_are_refused",
    "test_round_trip_and_negotiated_attributes",
    "test_send_above_negotiated_ceiling_raises_clearly",
    "test_send_accepts_bytes_like_and_rejects_text",
    "test_sending_to_a_closed_peer_eventually_breaks",
    "test_silent_peer_is_dropped_after_the_handshake_timeout",
    "test_the_accepting_side_tells_the_dialer_why",
    "test_the_raw_channel_holds_only_what_its_transport_needs",
    "test_unauthenticated_links_need_both_sides_to_opt_in",
    "test_wrong_secret_is_refused_before_any_payload",
]


@pytest.fixture
async def address() -> AsyncIterator[str]:
    """A WebRTC listen address: a room on a signaling server bound to 127.0.0.1."""
    async with SignalingServer() as server:
        yield f"webrtc://127.0.0.1:{server.port}/room"
