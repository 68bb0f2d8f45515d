"""Reference Server-Sent Events decoder (WHATWG HTML "event stream interpretation").

The decoder follows https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
to the letter:

* the stream is UTF-8 decoded (a character may be split across chunks; invalid bytes become
  U+FFFD, one per maximal invalid subpart, as the Encoding standard says) and one leading BOM is
  stripped, even when it arrives split across chunks;
* lines end at CRLF, LF or CR -- and only there (U+0085, U+2028, U+2029 are ordinary
  characters); a CRLF split between two chunks is one line ending: a CR that ends a chunk ends
  its line at once (so its event is not held back) and an LF that starts the next chunk is
  then skipped;
* a blank line dispatches the event, unless the data buffer is empty; the event type and the
  block's ``retry`` are reset either way; the last event ID persists across events;
* the spec's *last event ID string* (what a reconnection sends as ``Last-Event-ID``) is kept
  apart from its *last event ID buffer*: an ``id`` field sets the buffer, and only a blank line
  (the dispatch step, even of a block without data) copies the buffer to the string, so a block
  cut off by the end of the stream never changes the string; a new connection (after
  [`Decoder.close`][ssemock.sse.Decoder.close], or ``Decoder(last_event_id=...)``) starts from the string;
* an event that is not terminated by a blank line when the stream ends is discarded;
* ``retry`` takes any number of ASCII digits. A value of more than
  [`RETRY_DIGITS`][ssemock.sse.RETRY_DIGITS] significant digits (over 10**4300 ms, past any
  clock) is stored as [`MAX_RETRY`][ssemock.sse.MAX_RETRY], so no retry line is ignored.

Use [`decode`][ssemock.sse.decode] on a whole stream, [`iter_decode`][ssemock.sse.iter_decode] or
[`adecode`][ssemock.sse.adecode] to get each event as soon as it completes, or a
[`Decoder`][ssemock.sse.Decoder] to feed chunks yourself. The events never depend on where the
chunks are cut:

    >>> from ssemock.sse import decode
    >>> decode([b'event: delta\\ndata: {"text": "hel', b'lo"}\\n', b'\\ndata: [DONE]\\n\\n'])
    [ServerSentEvent(event='delta', data='{"text": "hello"}', id='', retry=None), ServerSentEvent(event='message', data='[DONE]', id='', retry=None)]
"""

import sys

from .framing.sse import *  # noqa: F403 (the public names, listed in its __all__)
from .framing.sse import __all__ as __all__

# One module under both names (patching one patches both), taken from sys.modules (the package
# attribute may be a copy an earlier in-process pytest run imported and dropped); it carries this
# public docstring, which help() and doctest read.
_module = sys.modules[f"{__package__}.framing.sse"]
_module.__doc__ = __doc__
sys.modules[__name__] = _module
