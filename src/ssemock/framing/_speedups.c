/* Optional accelerator for ssemock.sse, ssemock.cassette and the secret scan: hot loops in C,
 * each beside a pure-Python reference that gives the same results (the tests check each against it).
 *
 * ssemock.sse._py_blocks is the reference of blocks(): on a chunk without CR this computes
 * exactly what it does, and also takes CRLF-ended blocks (the pure code leaves a chunk with a
 * CR to the decoder's line loop); tests/test_sse.py checks both, and the decoder with each
 * against the spec, on random streams. The decoder's state machine (BOM, CR at a chunk end,
 * partial lines, retry, comments, unknown fields) stays in Python, and a block this scanner
 * does not take is left to it untouched.
 *
 * blocks(chunk, pos, last_id, events) -> (pos, last_id)
 *   From chunk[pos:], at the start of a block with empty buffers, append to `events` one
 *   ServerSentEvent per whole block of the shape
 *       ["id: " ID EOL] ["event: " TYPE EOL] "data: " DATA EOL EOL
 *   (EOL: LF or CRLF; ID without NUL; no other CR in a line), and stop at the first block of
 *   any other shape or not complete in the chunk. Returns the offset after the last block
 *   taken and the last event ID in effect there.
 *
 * feeder(Decoder, normal, pure_feed) -> Decoder.feed
 *   The decoder's feed with its two commonest calls in C, bound to its instances as a method
 *   (an instancemethod): inside a stream (_mode is `normal`, a bytes chunk), a chunk without a
 *   line ending is appended to _parts (a stream cut byte by byte is nearly all such calls);
 *   at a block start with empty buffers (_clean) the chunk's whole
 *   simple blocks are taken as blocks() takes them. Every other call, the rest of a chunk after
 *   its blocks, and a line ending after pieces (joined with them first, a memcpy each) go to
 *   pure_feed, which keeps the state machine. tests/test_sse.py compares the two call by call.
 *
 * until_line(chunks) -> bytes | bytearray | memoryview | None
 *   The next chunk of the iterator `chunks` that holds a line ending (LF or CR), the chunks
 *   before it that hold none joined in front of it (bytes; the chunk itself when none came
 *   before), or None at the end (the chunks after the last line ending complete no event):
 *   what ssemock.sse._py_until_line gives, for iter_decode, without a Python step per chunk (a
 *   stream cut byte by byte cost ~70 ns a byte there, ~2.5x ld-eventsource's line reader).
 *   A chunk the buffer protocol refuses raises TypeError.
 *
 * ready(chunks) -> async iterator
 *   An async iterator over the iterator `chunks`, every step ready at once (a replay that has
 *   nothing to wait for: ssemock.plan.serving.ReplayStream's fast path): __anext__ returns the
 *   object itself as the awaitable, and its send hands the next chunk back as a return, through
 *   am_send (no StopIteration made) where the interpreter asks for it (3.11; elsewhere, and under
 *   a trace function, through __next__'s StopIteration); StopAsyncIteration at the end. The
 *   async generator it stands for (ReplayStream._instant) cost ~70 ns a chunk, a fifth of what
 *   the rest of httpx's async read costs.
 *
 * chunk_map(tenths, times, ends, size, nested) -> bytes | None
 *   A recording's chunk map as ssemock.store.dumping lays it out, from the recorder's integer
 *   tenths of a millisecond (each time "q.r" ms, the digits of the tenths: the shortest repr of
 *   the double nearest k / 10, as orjson writes it) and the chunk ends, each pair on a line
 *   after `nested` and two spaces: what _times_ms, _chunk_map_loads and _chunk_map_laid_out make
 *   in six passes and a float's formatting each (~0.3 us a chunk). None, for the pure code to
 *   take, unless each time is its tenths / 10_000 (a float, not -0.0), the tenths rise from 0 to
 *   a day, the ends rise from above 0 to size and the lists are as long and not empty;
 *   nested=None checks only (b"").
 *
 * slices(body, ends) / slices(body, step, size) -> iterator of bytes
 *   A replay's chunks cut from its body as the client reads them (ssemock.variants.chunking.
 *   Slices.iterate): body[a:b] for each pair of successive ends (from 0) of a list, or for each
 *   start of range(0, size, step) and that start + step; its __length_hint__ is how many are
 *   left. The pure code's two maps over slice objects cost ~80 ns a chunk, a third of what the
 *   rest of an async replay costs per chunk; this one object step costs ~20. An end that is not
 *   an int within 0..len(body) after the one before is sliced as Python slices it.
 *
 * longest_gap(times) -> tuple[float, int] | None
 *   The first longest gap between successive times of a non-empty list of floats (the first gap
 *   from 0.0) and its index: what ssemock.variants.timing.longest_silence's loop gives, which
 *   every replay under instant timing asks (a Python step per chunk cost a replay of 100,000
 *   chunks ~5 ms); None when an item is not a float, which the loop then takes.
 *
 * text(data, big=1 << 20, /) -> str
 *   data.decode("utf-8", "replace"), the same str, for a large value (one 10 MB event): when
 *   len(data) >= big. Most of CPython's time there goes to the page faults of the new str's
 *   memory (one per 4 KiB, four bytes per character for an emoji-bearing text), so this asks
 *   Linux for huge pages for it first, then decodes in one pass, checking as it writes (ASCII
 *   16 bytes at a time). An invalid sequence anywhere hands the whole value to CPython's
 *   decoder, for its exact replacements. Smaller values, and text of 1 byte per character,
 *   go to CPython's decoder too.
 *
 * escaped(window, sep, layout) -> bytes | None
 *   For ssemock.cassette_body: window (UTF-8) as one JSON string, each byte escaped as orjson
 *   escapes it, with `layout` written as it is after each `sep` (b"\n" or b"\n\n", found left
 *   to right without overlap): what the pure code makes with orjson.dumps and markers. None when
 *   window is not UTF-8 (the pure code then raises the decoding error).
 *
 * plain(parts, stop) -> bool
 *   Whether every byte of parts (bytes, or views of them) is ASCII and none is one of stop's
 *   (at most 4 bytes): a large stream's window holds nothing the walk reads past its shapes
 *   (ssemock.scan.large_streams), asked without joining it, 16 bytes a step.
 *
 * values(data) -> int
 *   data.count(b",") + data.count(b"[") + data.count(b"{") in one pass, for the check that a
 *   cassette file holds no more JSON values than its size allows (ssemock.cassette._values).
 *
 * data_lines(segment) -> list[bytes | memoryview]
 *   The data of every SSE data line of segment whose value is not JSON, for the secret scan of a
 *   large stream (ssemock.scan.large_streams): what re.findall(rb"^data: ?+(?![{\[])([^\r\n]*)",
 *   segment, re.M) gives (a line starts at the segment's start or after an LF; one space after
 *   "data:" is taken; a value starting with '{' or '[' is left out; it ends at CR, LF or the
 *   end), in one pass of memchr instead of a regex tried at every line (tests/scan compare both).
 *   A value of a KiB or more is a view of the segment, equal to those bytes: the scan joins its
 *   window from it, so it is copied once, not twice.
 *
 * plan_match(ops, texts) -> list[str] | None | NotImplemented
 *   The string values of a run of events read by a plan (ssemock.scan.event_plans): ops, the
 *   plan's pattern as literals (str), digits from 1 to 9 (True) and captures up to the next quote
 *   (False), matched whole against each text in turn; the captures of them all in text order, or
 *   None when a text does not match (or holds a NUL). What the batch regex's findall over the
 *   texts joined by NULs gives (tests/scan compare both), without a regex step per character
 *   (~30% of the scan of a MB of small events). NotImplemented for a str of 2 or 4 bytes a
 *   character: the regex reads those.
 *
 * unfit(text) -> bool
 *   Whether a str holds a character below U+0020 or a surrogate (what a JSON string holds only
 *   escaped): re.search("[\x00-\x1f\ud800-\udfff]", text) is not None, 32 characters a step
 *   in a str of one byte a character (a plan's values, base64 audio among them: str.isprintable,
 *   its first check, cost ~1.5 ns a character).
 *
 * holds(data, stop) -> bool
 *   Whether data holds any of stop's bytes (4 at most): any(c in data for c in stop) in one pass
 *   (the escape search asks it of every piece a recording's scan searches: one pass, not three).
 *
 * seam_stretches(parts, ends, reach) -> bytes | None
 *   The bytes of the join of parts (bytes or views) within reach of each of ends (in order), the
 *   stretches of seams close together as one, a newline between two, cut from the parts unjoined;
 *   None where the stretches come to more than a quarter of the join: what the pure
 *   ssemock.scan.seams._py_stretches gives (the window of a large stream whose pieces hold no anchor
 *   is searched there alone), without a Python step per seam.
 *
 * b64_run(data, least) -> bool
 *   Whether data (bytes, or a str of ASCII: its characters are its bytes) holds `least` base64 /
 *   base64url bytes (A-Z a-z 0-9 + / _ -) in a row, any case: what b"a" * least in
 *   data.translate(table) gives with those bytes made "a" (ssemock.scan.credential_shapes.
 *   has_b64_run, asked of most strings the walk meets), by b64_runs' skipping search, with no
 *   copy nor translation of the data, stopping at the first run.
 *
 * b64_runs(data, least) -> set[bytes]
 *   Every distinct maximal run of base64 / base64url bytes (A-Z a-z 0-9 + / _ -) in data at least
 *   `least` bytes long and holding both an upper- and a lower-case letter (base64 of text mixes
 *   cases: the only runs the scan decodes), for the same scan: what {r for r in
 *   data.translate(table).split() if len(r) >= least and mixed(r)} gives with every other byte
 *   made a space, without the translated copy (nor a bytes object for a run of one case); a run
 *   of `least` bytes holds the byte `least` - 1 on from where it could start, so most bytes of
 *   text of short runs (JSON) are never looked at; a long run of letters of one case is read
 *   eight bytes at a time.
 *
 * b64_findall(text, least) -> list[str]
 *   What re.findall(r"[A-Za-z0-9+/_\-]{least,}={0,2}", text) gives for ASCII text (the walk's
 *   base64 runs to decode, ssemock.scan.credential_shapes.b64_findall): every maximal run of
 *   `least` base64 / base64url bytes or more with up to two "=" after it, in order, found by
 *   b64_runs' skipping search where the regex tries a match at every offset.
 *
 * b64_decode(data) -> bytes | None
 *   data (bytes of A-Z a-z 0-9 + / - _ only, no "=", a length that is no 4k + 1) decoded as
 *   base64 and base64url at once, the bits a last partial group leaves dropped: what the pure
 *   ssemock.scan.credential_shapes._decoded gives for such data (base64.urlsafe_b64decode or
 *   b64decode(validate=True) of it padded, after a translate, a regex check and two copies: ~2 ns
 *   a byte, where the walk decodes the join of a field streamed the same in every event, a
 *   100 KB run a MB of stream); None for any other byte or length, which the pure code takes.
 *
 * members(text) -> dict[bytes, list[bytes | memoryview]]
 *   The values of text's string members per member name, in text order (a value of a KiB or more
 *   as a view of text, as data_lines hands one): what grouping
 *   ssemock.scan.segment_plans.STRING_MEMBER.findall(text) by name gives (a name of 1-40 bytes
 *   of [A-Za-z0-9_] in quotes, whitespace, a colon, whitespace, a quoted string whose backslash
 *   escapes each take the next byte but a newline; after a failed match the search goes on at
 *   the next quote), for the large-stream scan: in one pass from quote to quote (memchr), a name
 *   met lately costing no new object, where the regex and a Python step per member cost ~8x.
 *
 * words(data, words) -> list[tuple[int, int]]
 *   (start, end) of every occurrence of each of `words` (lower-case ASCII bytes, each at least three
 *   long) in data, any ASCII case, overlapping ones too, sorted: what finding each word in
 *   data.lower() gives (ssemock.scan.fields.word_hits), in one pass without the lower-cased copy
 *   (with AVX2, 32 starts a step whose first two bytes are looked up in the words' first pairs,
 *   by the halves of each byte; else the pairs at even offsets looked up in a table of the words'
 *   first and second pairs).
 *
 * array_spans(data, pos, in_string, depth, element, after, count) -> (spans, pos, in_string,
 *     depth, element, after, count)
 *   A JSON array stream's elements found from data[pos:] (bytes or a bytearray), resumable: the
 *   state (inside a string, bracket depth, where the element being read starts, where the bytes
 *   after the last element start, elements read) goes in and comes out, so a chunk boundary can
 *   fall anywhere, a string's escape included (pos then past the end). spans: the start and end
 *   of each element closed, flat. Stops at the end of data, or before a bracket at depth 0 that
 *   opens an element after anything but one ',' (none before the first) or that closes none:
 *   the pure loop of ssemock.framing.json_array.element_spans and
 *   ssemock.scan.incremental_framings.JSONArrayDecoder takes it from there (its errors, the
 *   array's ']'), having been a Python step per quote and bracket (~126 ms of a MB of small
 *   elements).
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "structmember.h"
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define AVX2_PASSES 1 /* passes built for AVX2 beside the SSE2 ones, taken where the CPU has it */
static int has_avx2;
#endif
#if defined(__linux__)
#include <sys/mman.h>
#endif

typedef struct {
    PyTypeObject *cls;      /* ssemock.sse.ServerSentEvent */
    Py_ssize_t off[4];      /* slot offsets of event, data, id, retry */
    PyObject *message;      /* "message" */
} State;

static State state;

/* Where the line starting at p ends (its LF, or the CR of its CRLF), with the length of its
 * line ending in *eol; NULL when the line is not complete in [p, end) or holds a CR that is
 * not its CRLF's. */
static const char *
line_end(const char *p, const char *end, Py_ssize_t *eol)
{
    const char *lf = memchr(p, '\n', end - p);
    if (lf == NULL) {
        return NULL;
    }
    const char *cr = memchr(p, '\r', lf - p);
    if (cr == NULL) {
        *eol = 1;
        return lf;
    }
    if (cr + 1 != lf) {
        return NULL;
    }
    *eol = 2;
    return cr;
}

static int
starts(const char *p, const char *end, const char *prefix, Py_ssize_t n)
{
    return end - p >= n && memcmp(p, prefix, n) == 0;
}

/* -- text(): large UTF-8 values -------------------------------------------------------------- */

#define ASCII_MASK 0x8080808080808080ULL
#define HUGE_PAGE ((uintptr_t)2 << 20)
#define BIG 1048576

static int
ascii16(const unsigned char *p)
{
    uint64_t a, b;
    memcpy(&a, p, 8);
    memcpy(&b, p + 8, 8);
    return ((a | b) & ASCII_MASK) == 0;
}

/* The largest byte of [p, end), or 0xF0 as soon as one of 0xF0 or more is seen (the lead byte
 * of a code point past U+FFFF, or an invalid byte). The loop over 256-byte blocks compiles to
 * vector instructions. */
static unsigned
widest(const unsigned char *p, const unsigned char *end)
{
    unsigned char most = 0;
    while (end - p >= 256 && most < 0xF0) {
        for (int i = 0; i < 256; i++) {
            most = p[i] > most ? p[i] : most;
        }
        p += 256;
    }
    for (; p < end && most < 0xF0; p++) {
        most = *p > most ? *p : most;
    }
    return most;
}

/* Whether [p, end) is UTF-8 as CPython's strict decoder sees it. */
static int
valid(const unsigned char *p, const unsigned char *end)
{
    while (p < end) {
        unsigned c = p[0];
        if (c < 0x80) {  /* then the ASCII run it starts, 16 bytes at a time */
            p += 1;
            while (end - p >= 16 && ascii16(p)) {
                p += 16;
            }
        }
        else if (c < 0xC2) {
            return 0;
        }
        else if (c < 0xE0) {
            if (end - p < 2 || (p[1] & 0xC0) != 0x80) {
                return 0;
            }
            p += 2;
        }
        else if (c < 0xF0) {
            if (end - p < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80
                    || (c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] > 0x9F)) {
                return 0;
            }
            p += 3;
        }
        else {
            if (c > 0xF4 || end - p < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80
                    || (p[3] & 0xC0) != 0x80 || (c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] > 0x8F)) {
                return 0;
            }
            p += 4;
        }
    }
    return 1;
}

/* Write the code points of [p, end) to out (2 or 4 bytes each) while checking it is UTF-8 as
 * CPython's strict decoder sees it; the number of code points, or -1 at the first invalid
 * sequence (or one past U+FFFF for 2 bytes). Its checks are valid()'s, written out again: one
 * classifier shared by both costs this loop 10-25% on text dense in multi-byte characters. */
#define DECODE(T)                                                                                  \
    static Py_ssize_t                                                                              \
    decode_##T(const unsigned char *p, const unsigned char *end, T *out)                           \
    {                                                                                              \
        T *start = out;                                                                            \
        while (p < end) {                                                                          \
            unsigned c = p[0];                                                                     \
            if (c < 0x80) { /* then the ASCII run it starts, 16 bytes at a time */                 \
                *out++ = (T)c;                                                                     \
                p += 1;                                                                            \
                while (end - p >= 16 && ascii16(p)) {                                              \
                    for (int i = 0; i < 16; i++) {                                                 \
                        out[i] = p[i];                                                             \
                    }                                                                              \
                    p += 16;                                                                       \
                    out += 16;                                                                     \
                }                                                                                  \
            }                                                                                      \
            else if (c < 0xC2) {                                                                   \
                return -1;                                                                         \
            }                                                                                      \
            else if (c < 0xE0) {                                                                   \
                if (end - p < 2 || (p[1] & 0xC0) != 0x80) {                                        \
                    return -1;                                                                     \
                }                                                                                  \
                *out++ = (T)(((c & 0x1F) << 6) | (p[1] & 0x3F));                                   \
                p += 2;                                                                            \
            }                                                                                      \
            else if (c < 0xF0) {                                                                   \
                if (end - p < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80                  \
                        || (c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] > 0x9F)) {             \
                    return -1;                                                                     \
                }                                                                                  \
                *out++ = (T)(((c & 0x0F) << 12) | ((p[1] & 0x3F) << 6) | (p[2] & 0x3F));           \
                p += 3;                                                                            \
            }                                                                                      \
            else {                                                                                 \
                if (sizeof(T) < 4 || c > 0xF4 || end - p < 4 || (p[1] & 0xC0) != 0x80              \
                        || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80                          \
                        || (c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] > 0x8F)) {             \
                    return -1;                                                                     \
                }                                                                                  \
                *out++ = (T)(((c & 0x07) << 18) | ((p[1] & 0x3F) << 12) | ((p[2] & 0x3F) << 6)     \
                             | (p[3] & 0x3F));                                                     \
                p += 4;                                                                            \
            }                                                                                      \
        }                                                                                          \
        return out - start;                                                                        \
    }
DECODE(Py_UCS2)
DECODE(Py_UCS4)

/* Ask for huge pages for the whole 2 MiB pages inside [data, data + size): a hint, which the
 * kernel may ignore; the memory is the new str's own and not yet written. */
static void
advise_huge(void *data, size_t size)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    uintptr_t from = ((uintptr_t)data + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    uintptr_t to = ((uintptr_t)data + size) & ~(HUGE_PAGE - 1);
    if (to > from) {
        (void)madvise((void *)from, to - from, MADV_HUGEPAGE);
    }
#endif
}

static PyObject *
utf8(const char *s, Py_ssize_t n, Py_ssize_t big)
{
    const unsigned char *p = (const unsigned char *)s;
    unsigned most = n < big ? 0 : widest(p, p + n);
    if (most < 0xC4) {  /* small, or 1 byte per character: CPython's decoder is as fast there */
        return PyUnicode_DecodeUTF8(s, n, "replace");
    }
    /* Room for n code points (there are at most as many as bytes): the pages past the ones
     * written are never touched, and the resize gives them back. A valid text holding a byte of
     * 0xC4 or more has a code point past U+00FF, and one of 0xF0 or more one past U+FFFF, so the
     * str's width is the one CPython would give it. */
    PyObject *str = PyUnicode_New(n, most >= 0xF0 ? 0x10FFFF : 0xFFFF);
    if (str == NULL) {
        return NULL;
    }
    Py_ssize_t count;
    if (PyUnicode_KIND(str) == PyUnicode_2BYTE_KIND) {
        advise_huge(PyUnicode_DATA(str), (size_t)n * 2);
        count = decode_Py_UCS2(p, p + n, PyUnicode_DATA(str));
    }
    else {
        advise_huge(PyUnicode_DATA(str), (size_t)n * 4);
        count = decode_Py_UCS4(p, p + n, PyUnicode_DATA(str));
    }
    if (count < 0) {  /* not UTF-8: CPython's decoder, for its exact replacements */
        Py_DECREF(str);
        return PyUnicode_DecodeUTF8(s, n, "replace");
    }
    if (count < n && PyUnicode_Resize(&str, count) != 0) {
        return NULL;
    }
    return str;
}

static PyObject *
text(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t big = BIG;
    if (nargs < 1 || nargs > 2 || (nargs == 2 && (big = PyLong_AsSsize_t(args[1])) == -1 && PyErr_Occurred())) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "text(data: bytes-like, big: int = 1048576)");
        }
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) != 0) {
        return NULL;
    }
    /* Only bytes, or a view of bytes, cannot change while they are read: any other buffer (a
     * bytearray another thread fills, a shared mmap) goes to CPython's decoder. */
    PyObject *owner = PyMemoryView_Check(args[0]) ? PyMemoryView_GET_BASE(args[0]) : args[0];
    if (owner == NULL || !PyBytes_CheckExact(owner)) {
        big = PY_SSIZE_T_MAX;
    }
    PyObject *result = utf8(view.buf, view.len, big);
    PyBuffer_Release(&view);
    return result;
}

/* -- escaped(): a cassette body window as a JSON string ------------------------------------- */

/* What orjson writes for each byte of a UTF-8 string: 0 (the byte itself), a short escape
 * letter (\b \t \n \f \r \" \\), or 'u' (\u00XX, lowercase hex). */
static unsigned char json_escape[256];

static void
init_json_escape(void)
{
    for (int c = 0; c < 0x20; c++) {
        json_escape[c] = 'u';
    }
    json_escape['\b'] = 'b';
    json_escape['\t'] = 't';
    json_escape['\n'] = 'n';
    json_escape['\f'] = 'f';
    json_escape['\r'] = 'r';
    json_escape['"'] = '"';
    json_escape['\\'] = '\\';
}

/* Input bytes escaped between two checks of the room left: each writes at most `most`. */
#define ESCAPE_BLOCK 256

/* Whether any of the 8 bytes needs an escape (a control byte, a quote or a backslash). */
static int
special8(const unsigned char *p)
{
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
    uint64_t x, quote, slash;
    memcpy(&x, p, 8);
    quote = x ^ (ones * '"');
    slash = x ^ (ones * '\\');
    return ((((x - ones * 0x20) & ~x) | ((quote - ones) & ~quote) | ((slash - ones) & ~slash)) & high) != 0;
}

/* Write the escape of c (a byte json_escape escapes; *pp just past it), and after a separator
 * (a newline, or the second of two) the layout; a pair's second newline is taken from *pp. */
static inline unsigned char *
put_escape(unsigned c, const unsigned char **pp, const unsigned char *end, unsigned char *w, int pair,
           const char *layout, Py_ssize_t layout_len)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char e = json_escape[c];
    *w++ = '\\';
    *w++ = e;
    if (e == 'u') {
        *w++ = '0';
        *w++ = '0';
        *w++ = hex[c >> 4];
        *w++ = hex[c & 15];
    }
    else if (c == '\n' && (!pair || (*pp < end && **pp == '\n'))) {  /* a separator */
        if (pair) {  /* (its second newline may lie past the block: one byte more) */
            *w++ = '\\';
            *w++ = 'n';
            *pp += 1;
        }
        memcpy(w, layout, layout_len);
        w += layout_len;
    }
    return w;
}

#ifdef AVX2_PASSES
/* escaped()'s block (ESCAPE_BLOCK bytes at most) with AVX2: where each byte needing an escape
 * stands is found first, 32 bytes a step, into a bitmap; then the runs between them are copied
 * and each one escaped (the search runs ahead of the writing: a step's result waits on no
 * write). Where the block ends goes in *pp (past a pair's second newline beyond it); returns
 * where the writing ends. */
__attribute__((target("avx2"))) static unsigned char *
escape_block_avx2(const unsigned char **pp, const unsigned char *block_end, const unsigned char *end,
                  unsigned char *w, int pair, const char *layout, Py_ssize_t layout_len)
{
    const __m256i control = _mm256_set1_epi8(0x1f), quote = _mm256_set1_epi8('"');
    const __m256i slash = _mm256_set1_epi8('\\');
    const unsigned char *p = *pp;
    Py_ssize_t n = block_end - p, i = 0, at = 0;
    uint64_t bits[ESCAPE_BLOCK / 64] = {0};
    for (; n - i >= 32; i += 32) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(p + i));
        __m256i special = _mm256_or_si256(_mm256_cmpeq_epi8(_mm256_min_epu8(v, control), v),
                                          _mm256_or_si256(_mm256_cmpeq_epi8(v, quote), _mm256_cmpeq_epi8(v, slash)));
        bits[i >> 6] |= (uint64_t)(uint32_t)_mm256_movemask_epi8(special) << (i & 63);
    }
    for (; i < n; i++) {
        if (json_escape[p[i]]) {
            bits[i >> 6] |= (uint64_t)1 << (i & 63);
        }
    }
    for (Py_ssize_t word = 0; word < ESCAPE_BLOCK / 64; word++) {
        while (bits[word]) {
            Py_ssize_t k = word * 64 + __builtin_ctzll(bits[word]);
            bits[word] &= bits[word] - 1;
            if (k < at) { /* a pair's second newline, written with the first */
                continue;
            }
            memcpy(w, p + at, (size_t)(k - at));
            w += k - at;
            const unsigned char *q = p + k + 1;
            w = put_escape(p[k], &q, end, w, pair, layout, layout_len);
            at = q - p;
        }
    }
    if (at < n) {
        memcpy(w, p + at, (size_t)(n - at));
        w += n - at;
        at = n;
    }
    *pp = p + at;
    return w;
}
#endif

/* Make room in *out (a new bytes object of *cap bytes) for `need` bytes in all. */
static int
room(PyObject **out, Py_ssize_t *cap, Py_ssize_t need)
{
    if (need <= *cap) {
        return 0;
    }
    Py_ssize_t more = *cap / 2 > need - *cap ? *cap / 2 : need - *cap;
    if (more > PY_SSIZE_T_MAX - *cap) {
        PyErr_NoMemory();
        return -1;
    }
    *cap += more;
    return _PyBytes_Resize(out, *cap);
}

static PyObject *
escaped(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyBytes_CheckExact(args[0]) || !PyBytes_CheckExact(args[1]) || !PyBytes_CheckExact(args[2])
            || PyBytes_GET_SIZE(args[1]) < 1 || PyBytes_GET_SIZE(args[1]) > 2
            || memcmp(PyBytes_AS_STRING(args[1]), "\n\n", PyBytes_GET_SIZE(args[1])) != 0) {
        PyErr_SetString(PyExc_TypeError, "escaped(window: bytes, sep: b'\\n' or b'\\n\\n', layout: bytes)");
        return NULL;
    }
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    const unsigned char *end = p + PyBytes_GET_SIZE(args[0]);
    if (!valid(p, end)) {
        Py_RETURN_NONE;
    }
    int pair = PyBytes_GET_SIZE(args[1]) == 2;
    const char *layout = PyBytes_AS_STRING(args[2]);
    Py_ssize_t layout_len = PyBytes_GET_SIZE(args[2]);
    Py_ssize_t most = 10 + layout_len;  /* the most one escape writes: two, and a layout */
    Py_ssize_t cap = (end - p) + (end - p) / 4 + most + 2, size = 1;  /* JSON text escapes a few */
    PyObject *out = PyBytes_FromStringAndSize(NULL, cap);
    if (out == NULL) {
        return NULL;
    }
    PyBytes_AS_STRING(out)[0] = '"';
    while (p < end) {  /* a block of input at a time, with room made for the most it writes */
        const unsigned char *block_end = end - p > ESCAPE_BLOCK ? p + ESCAPE_BLOCK : end;
        if (room(&out, &cap, size + (block_end - p) * most + 1) != 0) {
            return NULL;
        }
        unsigned char *w = (unsigned char *)PyBytes_AS_STRING(out) + size;
#ifdef AVX2_PASSES
        if (has_avx2) {
            w = escape_block_avx2(&p, block_end, end, w, pair, layout, layout_len);
            size = (char *)w - PyBytes_AS_STRING(out);
            continue;
        }
#endif
        while (p < block_end) {
            while (block_end - p >= 8 && !special8(p)) {  /* 8 bytes to copy as they are */
                memcpy(w, p, 8);
                w += 8;
                p += 8;
            }
            while (p < block_end) {  /* a byte at a time, to the next escape (it included) */
                unsigned c = *p++;
                if (json_escape[c] == 0) {
                    *w++ = (unsigned char)c;
                    continue;
                }
                w = put_escape(c, &p, end, w, pair, layout, layout_len);
                break;
            }
        }
        size = (char *)w - PyBytes_AS_STRING(out);
    }
    PyBytes_AS_STRING(out)[size++] = '"';
    if (_PyBytes_Resize(&out, size) != 0) {
        return NULL;
    }
    return out;
}

/* -- plain(): a window's parts ASCII, none of a few bytes ------------------------------------ */

#ifdef AVX2_PASSES
/* plain_run's 64 bytes a step with AVX2 (twice SSE2's width, one test a step): where the first
 * *done bytes hold none of the bytes looked for, 1 (the caller reads the rest), else 0. Stop bytes
 * below 0x80 whose low halves differ (the scan's are) are looked up in one shuffle, each byte's
 * low half picking the one stop byte it could be (0x80 and up: none): a compare each, not one a
 * stop byte (as fast as memchr for one). */
__attribute__((target("avx2"))) static int
plain_run_avx2(const unsigned char *p, Py_ssize_t n, const unsigned char *stop, Py_ssize_t nstop, int high, Py_ssize_t *done)
{
    __m256i s[4];
    char table[16];
    int halves = 0; /* the low halves of the stop bytes seen, a bit each; -1: the shuffle won't do */
    for (int h = 0; h < 16; h++) {
        table[h] = (char)(0x80 | h); /* no byte below 0x80 equals it */
    }
    for (Py_ssize_t k = 0; k < nstop; k++) {
        s[k] = _mm256_set1_epi8((char)stop[k]);
        int h = stop[k] & 15;
        halves = (halves < 0 || stop[k] >= 0x80 || (halves & (1 << h))) ? -1 : halves | (1 << h);
        table[h] = (char)stop[k];
    }
    __m256i mask = _mm256_set1_epi8(high ? (char)0xff : 0); /* high: a byte's high bit, past ASCII, is a hit */
    __m256i lookup = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)table));
    Py_ssize_t i = 0;
    for (; n - i >= 64; i += 64) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(p + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(p + i + 32));
        __m256i hit = _mm256_and_si256(_mm256_or_si256(a, b), mask);
        if (halves >= 0) {
            hit = _mm256_or_si256(hit, _mm256_cmpeq_epi8(_mm256_shuffle_epi8(lookup, a), a));
            hit = _mm256_or_si256(hit, _mm256_cmpeq_epi8(_mm256_shuffle_epi8(lookup, b), b));
        } else {
            for (Py_ssize_t k = 0; k < nstop; k++) {
                hit = _mm256_or_si256(hit, _mm256_or_si256(_mm256_cmpeq_epi8(a, s[k]), _mm256_cmpeq_epi8(b, s[k])));
            }
        }
        if (_mm256_movemask_epi8(hit) != 0) {
            return 0;
        }
    }
    *done = i;
    return 1;
}
#endif

/* Whether [p, p + n) holds none of stop's nstop bytes (at most 4), and (high) no byte of 0x80 or more. */
static int
plain_run(const unsigned char *p, Py_ssize_t n, const unsigned char *stop, Py_ssize_t nstop, int high)
{
    Py_ssize_t i = 0;
#ifdef AVX2_PASSES
    if (has_avx2 && !plain_run_avx2(p, n, stop, nstop, high, &i)) {
        return 0;
    }
#endif
#ifdef __SSE2__
    __m128i s[4];
    for (Py_ssize_t k = 0; k < nstop; k++) {
        s[k] = _mm_set1_epi8((char)stop[k]);
    }
    __m128i mask = _mm_set1_epi8(high ? (char)0xff : 0);
    for (; n - i >= 16; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
        __m128i hit = _mm_and_si128(v, mask); /* a byte's high bit: past ASCII; an equal one: all bits */
        for (Py_ssize_t k = 0; k < nstop; k++) {
            hit = _mm_or_si128(hit, _mm_cmpeq_epi8(v, s[k]));
        }
        if (_mm_movemask_epi8(hit) != 0) {
            return 0;
        }
    }
#endif
    for (; i < n; i++) {
        if ((high && (p[i] & 0x80)) || (nstop > 0 && memchr(stop, p[i], (size_t)nstop) != NULL)) {
            return 0;
        }
    }
    return 1;
}

static PyObject *
plain(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyList_CheckExact(args[0]) || !PyBytes_CheckExact(args[1]) || PyBytes_GET_SIZE(args[1]) > 4) {
        PyErr_SetString(PyExc_TypeError, "plain(parts: list[bytes | memoryview], stop: bytes of 4 at most)");
        return NULL;
    }
    const unsigned char *stop = (const unsigned char *)PyBytes_AS_STRING(args[1]);
    Py_ssize_t nstop = PyBytes_GET_SIZE(args[1]);
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(args[0]); k++) {
        Py_buffer view;
        if (PyObject_GetBuffer(PyList_GET_ITEM(args[0], k), &view, PyBUF_SIMPLE) != 0) {
            return NULL;
        }
        int ok = plain_run((const unsigned char *)view.buf, view.len, stop, nstop, 1);
        PyBuffer_Release(&view);
        if (!ok) {
            Py_RETURN_FALSE;
        }
    }
    Py_RETURN_TRUE;
}

static PyObject *
holds(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyBytes_CheckExact(args[1]) || PyBytes_GET_SIZE(args[1]) > 4) {
        PyErr_SetString(PyExc_TypeError, "holds(data: bytes-like, stop: bytes of 4 at most)");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) != 0) {
        return NULL;
    }
    const unsigned char *stop = (const unsigned char *)PyBytes_AS_STRING(args[1]);
    int none = plain_run((const unsigned char *)view.buf, view.len, stop, PyBytes_GET_SIZE(args[1]), 0);
    PyBuffer_Release(&view);
    return PyBool_FromLong(!none);
}

/* -- seam_stretches(): the bytes around a window's seams ------------------------------------ */

/* The bytes of [lo, hi) of the join of parts (n of them, their buffers in views), cut from the
 * part at *k (which starts at *at in the join) on: *k and *at left at the part holding lo. */
static void
copy_span(Py_buffer *views, Py_ssize_t n, Py_ssize_t *k, Py_ssize_t *at, Py_ssize_t lo, Py_ssize_t hi, char *out)
{
    while (*k < n && *at + views[*k].len <= lo) {
        *at += views[*k].len;
        (*k)++;
    }
    Py_ssize_t j = *k, pos = *at;
    while (pos < hi && j < n) {
        Py_ssize_t from = lo > pos ? lo - pos : 0, to = hi - pos < views[j].len ? hi - pos : views[j].len;
        memcpy(out, (const char *)views[j].buf + from, (size_t)(to - from));
        out += to - from;
        pos += views[j].len;
        j++;
    }
}

static PyObject *
seam_stretches(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyList_CheckExact(args[0]) || !PyList_CheckExact(args[1]) || !PyLong_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "seam_stretches(parts: list[bytes | memoryview], ends: list[int], reach: int)");
        return NULL;
    }
    Py_ssize_t reach = PyLong_AsSsize_t(args[2]);
    if (reach < 0) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "seam_stretches(): reach below 0");
        }
        return NULL;
    }
    PyObject *parts = args[0], *ends = args[1], *out = NULL;
    Py_ssize_t n = PyList_GET_SIZE(parts), ne = PyList_GET_SIZE(ends), size = 0, got = 0;
    Py_buffer *views = PyMem_Calloc(n ? (size_t)n : 1, sizeof(Py_buffer));
    Py_ssize_t *spans = PyMem_Malloc(2 * (ne ? (size_t)ne : 1) * sizeof(Py_ssize_t));
    if (views == NULL || spans == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (; got < n; got++) {
        if (PyObject_GetBuffer(PyList_GET_ITEM(parts, got), &views[got], PyBUF_SIMPLE) != 0) {
            goto done;
        }
        size += views[got].len;
    }
    Py_ssize_t count = 0, covered = 0, last = 0; /* spans made, the bytes they cover, the end before */
    for (Py_ssize_t e = 0; e < ne; e++) {
        Py_ssize_t end = PyLong_AsSsize_t(PyList_GET_ITEM(ends, e));
        if (end < last) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_ValueError, "seam_stretches(): ends not in order from 0");
            }
            goto done;
        }
        Py_ssize_t lo = end > reach ? end - reach : 0, hi = end < size - reach ? end + reach : size;
        if (count && lo <= spans[2 * count - 1]) { /* close to the one before: one stretch */
            spans[2 * count - 1] = hi;
        } else if (lo < hi) {
            spans[2 * count] = lo;
            spans[2 * count + 1] = hi;
            count++;
        }
        last = end;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        covered += spans[2 * i + 1] - spans[2 * i];
    }
    if (covered * 4 > size) { /* seams close together: the whole is searched */
        out = Py_NewRef(Py_None);
        goto done;
    }
    out = PyBytes_FromStringAndSize(NULL, count ? covered + count - 1 : 0);
    if (out == NULL) {
        goto done;
    }
    char *w = PyBytes_AS_STRING(out);
    Py_ssize_t k = 0, at = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (i) {
            *w++ = '\n';
        }
        copy_span(views, n, &k, &at, spans[2 * i], spans[2 * i + 1], w);
        w += spans[2 * i + 1] - spans[2 * i];
    }
done:
    for (Py_ssize_t i = 0; i < got; i++) {
        PyBuffer_Release(&views[i]);
    }
    PyMem_Free(views);
    PyMem_Free(spans);
    return out;
}

/* -- plan_match(): a run of events read by a plan ------------------------------------------- */

/* Whether text (1-byte kind) matches ops whole from its start, its captures appended to out:
 * 1 matched, 0 not, -1 an error. */
static int
plan_text(PyObject *ops, PyObject *text, PyObject *out)
{
    const Py_UCS1 *t = PyUnicode_1BYTE_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), at = 0, added = PyList_GET_SIZE(out);
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(ops); k++) {
        PyObject *op = PyTuple_GET_ITEM(ops, k);
        if (PyUnicode_Check(op)) { /* a literal (1-byte kind: checked by the caller) */
            Py_ssize_t m = PyUnicode_GET_LENGTH(op);
            if (m > n - at || memcmp(t + at, PyUnicode_1BYTE_DATA(op), (size_t)m) != 0) {
                goto no;
            }
            at += m;
        } else if (op == Py_True) { /* a digit from 1 to 9 */
            if (at >= n || t[at] < '1' || t[at] > '9') {
                goto no;
            }
            at++;
        } else { /* a capture: up to the next quote (a NUL: no JSON text holds one) */
            const Py_UCS1 *q = memchr(t + at, '"', (size_t)(n - at));
            Py_ssize_t end = q != NULL ? q - t : n;
            if (memchr(t + at, 0, (size_t)(end - at)) != NULL) {
                goto no;
            }
            PyObject *value = PyUnicode_Substring(text, at, end);
            if (value == NULL || PyList_Append(out, value) < 0) {
                Py_XDECREF(value);
                return -1;
            }
            Py_DECREF(value);
            at = end;
        }
    }
    if (at == n) {
        return 1;
    }
no:
    return PyList_SetSlice(out, added, PyList_GET_SIZE(out), NULL) < 0 ? -1 : 0;
}

static PyObject *
plan_match(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyTuple_CheckExact(args[0]) || !PyList_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "plan_match(ops: tuple[str | bool, ...], texts: list[str])");
        return NULL;
    }
    PyObject *ops = args[0], *texts = args[1];
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(ops); k++) {
        PyObject *op = PyTuple_GET_ITEM(ops, k);
        if (PyUnicode_Check(op) ? PyUnicode_KIND(op) != PyUnicode_1BYTE_KIND : (op != Py_True && op != Py_False)) {
            Py_RETURN_NOTIMPLEMENTED;
        }
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(texts); i++) {
        PyObject *text = PyList_GET_ITEM(texts, i);
        if (!PyUnicode_Check(text) || PyUnicode_KIND(text) != PyUnicode_1BYTE_KIND) {
            Py_RETURN_NOTIMPLEMENTED;
        }
    }
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(texts); i++) {
        int r = plan_text(ops, PyList_GET_ITEM(texts, i), out);
        if (r <= 0) {
            Py_DECREF(out);
            if (r < 0) {
                return NULL;
            }
            Py_RETURN_NONE;
        }
    }
    return out;
}

/* -- unfit(): a control character or a surrogate in a str ------------------------------------ */

#ifdef AVX2_PASSES
/* Whether [p, p + n) holds a byte below 0x20, 32 bytes a step: where the first *done bytes hold
 * none, 0 (the caller reads the rest). */
__attribute__((target("avx2"))) static int
control_avx2(const Py_UCS1 *p, Py_ssize_t n, Py_ssize_t *done)
{
    const __m256i control = _mm256_set1_epi8(0x1f);
    Py_ssize_t i = 0;
    for (; n - i >= 32; i += 32) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(p + i));
        if (_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_min_epu8(v, control), v))) {
            return 1;
        }
    }
    *done = i;
    return 0;
}
#endif

static PyObject *
unfit(PyObject *module, PyObject *text)
{
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "unfit(text: str)");
        return NULL;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), i = 0;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    if (kind == PyUnicode_1BYTE_KIND) {
#ifdef AVX2_PASSES
        if (has_avx2 && control_avx2((const Py_UCS1 *)data, n, &i)) {
            Py_RETURN_TRUE;
        }
#endif
        for (; i < n; i++) {
            if (((const Py_UCS1 *)data)[i] < 0x20) {
                Py_RETURN_TRUE;
            }
        }
        Py_RETURN_FALSE;
    }
    for (; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c < 0x20 || (c >= 0xd800 && c <= 0xdfff)) {
            Py_RETURN_TRUE;
        }
    }
    Py_RETURN_FALSE;
}

/* -- values(): commas and opening brackets ----------------------------------------------- */

static PyObject *
values(PyObject *module, PyObject *data)
{
    if (!PyBytes_CheckExact(data)) {
        PyErr_SetString(PyExc_TypeError, "values(data: bytes)");
        return NULL;
    }
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(data);
    Py_ssize_t n = PyBytes_GET_SIZE(data), count = 0;
    while (n > 0) {  /* blocks of at most 255, so that a byte counter never overflows */
        Py_ssize_t block = n < 255 ? n : 255;
        unsigned char in_block = 0;
        for (Py_ssize_t i = 0; i < block; i++) {  /* compiles to vector instructions */
            in_block += (p[i] == ',') + (p[i] == '[') + (p[i] == '{');
        }
        count += in_block;
        p += block;
        n -= block;
    }
    return PyLong_FromSsize_t(count);
}

/* -- data_lines(): the data of non-JSON data lines ------------------------------------------ */

#define LONG_VALUE 1024 /* a value this long or longer is handed as a view of the segment */

static PyObject *
data_lines(PyObject *module, PyObject *segment)
{
    if (!PyBytes_CheckExact(segment)) {
        PyErr_SetString(PyExc_TypeError, "data_lines(segment: bytes)");
        return NULL;
    }
    const char *base = PyBytes_AS_STRING(segment), *p = base;
    const char *end = p + PyBytes_GET_SIZE(segment);
    PyObject *out = PyList_New(0), *view = NULL; /* the segment's view, made for the first long value */
    if (out == NULL) {
        return NULL;
    }
    while (p < end) {
        const char *lf = memchr(p, '\n', end - p);
        const char *line_end = lf != NULL ? lf : end;
        if (line_end - p >= 5 && memcmp(p, "data:", 5) == 0) {
            const char *v = p + 5;
            if (v < line_end && *v == ' ') {
                v++;
            }
            if (v == line_end || (*v != '{' && *v != '[')) {
                const char *cr = memchr(v, '\r', line_end - v);
                const char *stop = cr != NULL ? cr : line_end;
                PyObject *value;
                if (stop - v < LONG_VALUE) {
                    value = PyBytes_FromStringAndSize(v, stop - v);
                } else {
                    if (view == NULL && (view = PyMemoryView_FromObject(segment)) == NULL) {
                        Py_DECREF(out);
                        return NULL;
                    }
                    value = PySequence_GetSlice(view, v - base, stop - base);
                }
                if (value == NULL || PyList_Append(out, value) < 0) {
                    Py_XDECREF(value);
                    Py_XDECREF(view);
                    Py_DECREF(out);
                    return NULL;
                }
                Py_DECREF(value);
            }
        }
        if (lf == NULL) {
            break;
        }
        p = lf + 1;
    }
    Py_XDECREF(view);
    return out;
}

/* -- b64_runs(): the base64 runs ------------------------------------------------------------ */

static unsigned char b64_byte[256];

static void
init_b64_byte(void)
{
    for (int c = 0; c < 256; c++) { /* 1: a base64 byte, 2: an upper-case letter, 4: a lower-case one */
        b64_byte[c] = (c >= 'A' && c <= 'Z')   ? 3
                      : (c >= 'a' && c <= 'z') ? 5
                      : ((c >= '0' && c <= '9') || c == '+' || c == '/' || c == '_' || c == '-');
    }
}

/* The bytes of x not from lo to hi (1 <= lo <= hi <= 127), as the high bit of each (none: 0):
 * below lo or above hi, tested on the eight at once (the high bit of a byte's sum or difference). */
static uint64_t
outside(uint64_t x, unsigned int lo, unsigned int hi)
{
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
    return (((x - ones * lo) & ~x) | (x + ones * (127 - hi)) | x) & high;
}

/* Whether every byte of x is from lo to hi (1 <= lo <= hi <= 127). */
static int
all_between(uint64_t x, unsigned int lo, unsigned int hi)
{
    return !outside(x, lo, hi);
}

/* Where a run of letters of one case (from lo to lo + 25) that goes on at `end` ends: with SSE2
 * (every x86-64) 64 bytes a step, about 0.4 instructions a byte; then sixteen, then eight at once
 * (about 1.4 instructions a byte), bytes the step before left over looked at by the caller. */
static Py_ssize_t
one_case_end(const unsigned char *base, Py_ssize_t end, Py_ssize_t n, unsigned int lo)
{
#ifdef __SSE2__
    const __m128i low = _mm_set1_epi8((char)lo), top = _mm_set1_epi8(25);
    while (end + 64 <= n) { /* a byte of the case is 0 to 25 less lo: its max with 25 is 25 */
        __m128i a = _mm_sub_epi8(_mm_loadu_si128((const __m128i *)(base + end)), low);
        __m128i b = _mm_sub_epi8(_mm_loadu_si128((const __m128i *)(base + end + 16)), low);
        __m128i c = _mm_sub_epi8(_mm_loadu_si128((const __m128i *)(base + end + 32)), low);
        __m128i d = _mm_sub_epi8(_mm_loadu_si128((const __m128i *)(base + end + 48)), low);
        __m128i ab = _mm_max_epu8(_mm_max_epu8(a, b), _mm_max_epu8(c, d));
        if (_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_max_epu8(ab, top), top)) != 0xFFFF) {
            break;
        }
        end += 64;
    }
#endif
    uint64_t x, y;
    while (end + 16 <= n &&
           (memcpy(&x, base + end, 8), memcpy(&y, base + end + 8, 8),
            !(outside(x, lo, lo + 25) | outside(y, lo, lo + 25)))) {
        end += 16;
    }
    while (end + 8 <= n && (memcpy(&x, base + end, 8), all_between(x, lo, lo + 25))) {
        end += 8;
    }
    return end;
}

static PyObject *
b64_runs(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyBytes_CheckExact(args[0]) || !PyLong_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "b64_runs(data: bytes, least: int)");
        return NULL;
    }
    Py_ssize_t least = PyLong_AsSsize_t(args[1]);
    if (least == -1 && PyErr_Occurred()) {
        return NULL;
    }
    const unsigned char *base = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    Py_ssize_t n = PyBytes_GET_SIZE(args[0]), i = 0;
    PyObject *out = PySet_New(NULL);
    if (out == NULL) {
        return NULL;
    }
    if (least < 1) {
        least = 1; /* a run has a byte at least */
    }
    /* A run of `least` bytes or more starting at i or later holds the byte at i + least - 1: that
     * byte is looked at first, and where it is no base64 byte the search jumps past it (the
     * byte before i is never a base64 byte, so a run found starts at i or later). */
    while (n - i >= least) { /* (not i + least: a huge least would overflow) */
        Py_ssize_t probe = i + least - 1;
        if (!b64_byte[base[probe]]) {
            i = probe + 1;
            continue;
        }
        Py_ssize_t start = probe, end = probe;
        while (start > i && b64_byte[base[start - 1]]) {
            start--;
        }
        unsigned int kinds = 0;
        while (end + 8 <= n) { /* eight bytes a step while they all are base64 (a long run) */
            const unsigned char *e = base + end;
            unsigned int all = b64_byte[e[0]] & b64_byte[e[1]] & b64_byte[e[2]] & b64_byte[e[3]] &
                               b64_byte[e[4]] & b64_byte[e[5]] & b64_byte[e[6]] & b64_byte[e[7]];
            if (!all) {
                break;
            }
            kinds |= b64_byte[e[0]] | b64_byte[e[1]] | b64_byte[e[2]] | b64_byte[e[3]] | b64_byte[e[4]] |
                     b64_byte[e[5]] | b64_byte[e[6]] | b64_byte[e[7]];
            end += 8;
            if (kinds == 5 || kinds == 3) { /* no letter of the other case yet: its letters */
                end = one_case_end(base, end, n, kinds == 5 ? 'a' : 'A'); /* many at once */
            }
        }
        while (end < n && b64_byte[base[end]]) {
            kinds |= b64_byte[base[end]];
            end++;
        }
        for (Py_ssize_t k = start; k < probe && kinds != 7; k++) {
            kinds |= b64_byte[base[k]];
        }
        if (end - start >= least && kinds == 7) {
            PyObject *run = PyBytes_FromStringAndSize((const char *)base + start, end - start);
            if (run == NULL || PySet_Add(out, run) < 0) {
                Py_XDECREF(run);
                Py_DECREF(out);
                return NULL;
            }
            Py_DECREF(run);
        }
        i = end + 1;
    }
    return out;
}

/* -- b64_run(): whether a run of base64 bytes is there -------------------------------------- */

/* The next run of base64 bytes that may be `least` long, as b64_runs searches: the byte such a run
 * from *i on must hold is looked at first, and the search jumps past it where it is no base64
 * byte. Sets *start (the run's first byte, never before *i) and returns the end known so far
 * (the probed byte's next), or -1 when no run of `least` bytes fits in what is left. */
static inline Py_ssize_t
run_from(const unsigned char *base, Py_ssize_t n, Py_ssize_t *i, Py_ssize_t least, Py_ssize_t *start)
{
    while (n - *i >= least) {
        Py_ssize_t probe = *i + least - 1;
        if (!b64_byte[base[probe]]) {
            *i = probe + 1;
            continue;
        }
        Py_ssize_t s = probe;
        while (s > *i && b64_byte[base[s - 1]]) {
            s--;
        }
        *start = s;
        return probe + 1;
    }
    return -1;
}

static PyObject *
b64_run(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyLong_CheckExact(args[1]) ||
        !(PyBytes_CheckExact(args[0]) || (PyUnicode_CheckExact(args[0]) && PyUnicode_IS_ASCII(args[0])))) {
        PyErr_SetString(PyExc_TypeError, "b64_run(data: bytes | ASCII str, least: int)");
        return NULL;
    }
    Py_ssize_t least = PyLong_AsSsize_t(args[1]);
    if (least == -1 && PyErr_Occurred()) {
        return NULL;
    }
    const unsigned char *base;
    Py_ssize_t n, i = 0;
    if (PyBytes_CheckExact(args[0])) {
        base = (const unsigned char *)PyBytes_AS_STRING(args[0]);
        n = PyBytes_GET_SIZE(args[0]);
    } else { /* an ASCII str: its characters are its bytes */
        base = (const unsigned char *)PyUnicode_DATA(args[0]);
        n = PyUnicode_GET_LENGTH(args[0]);
    }
    if (least < 1) {
        least = 1;
    }
    Py_ssize_t start, end;
    while ((end = run_from(base, n, &i, least, &start)) >= 0) {
        while (end - start < least && end < n && b64_byte[base[end]]) {
            end++;
        }
        if (end - start >= least) {
            Py_RETURN_TRUE;
        }
        i = end + 1;
    }
    Py_RETURN_FALSE;
}

/* -- b64_findall(): the base64 runs of ASCII text, as a regex finds them ---------------------- */

static PyObject *
b64_findall(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyUnicode_CheckExact(args[0]) || !PyUnicode_IS_ASCII(args[0]) ||
        !PyLong_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "b64_findall(text: ASCII str, least: int)");
        return NULL;
    }
    Py_ssize_t least = PyLong_AsSsize_t(args[1]);
    if (least == -1 && PyErr_Occurred()) {
        return NULL;
    }
    const unsigned char *base = (const unsigned char *)PyUnicode_DATA(args[0]);
    Py_ssize_t n = PyUnicode_GET_LENGTH(args[0]), i = 0;
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        return NULL;
    }
    if (least < 1) {
        least = 1;
    }
    /* What re.findall gives for "[A-Za-z0-9+/_\-]{least,}={0,2}": every whole run of `least`
     * base64 bytes or more, in order, with up to two "=" after it. The search skips as b64_runs'
     * does (the byte before i is never a base64 byte). */
    Py_ssize_t start, end;
    while ((end = run_from(base, n, &i, least, &start)) >= 0) {
        uint64_t x;
        while (end + 8 <= n) { /* eight bytes a step: letters of one case tested at once, else looked up */
            const unsigned char *e = base + end;
            memcpy(&x, e, 8);
            if (!all_between(x, 'a', 'z') && !all_between(x, 'A', 'Z') &&
                !(b64_byte[e[0]] & b64_byte[e[1]] & b64_byte[e[2]] & b64_byte[e[3]] & b64_byte[e[4]] &
                  b64_byte[e[5]] & b64_byte[e[6]] & b64_byte[e[7]])) {
                break;
            }
            end += 8;
        }
        while (end < n && b64_byte[base[end]]) {
            end++;
        }
        Py_ssize_t after = end;
        if (end - start >= least) {
            while (after < n && after - end < 2 && base[after] == '=') {
                after++;
            }
            PyObject *run = PyUnicode_New(after - start, 127);
            if (run == NULL) {
                Py_DECREF(out);
                return NULL;
            }
            memcpy(PyUnicode_DATA(run), base + start, after - start);
            int r = PyList_Append(out, run);
            Py_DECREF(run);
            if (r < 0) {
                Py_DECREF(out);
                return NULL;
            }
        }
        i = after > end ? after : end + 1;
    }
    return out;
}

/* -- b64_decode(): a base64 run's bytes --------------------------------------------------------- */

static signed char b64_value[256]; /* a base64 or base64url byte's six bits; -1: no such byte */

static void
init_b64_value(void)
{
    static const char letters[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    memset(b64_value, -1, sizeof(b64_value));
    for (int v = 0; v < 64; v++) {
        b64_value[(unsigned char)letters[v]] = (signed char)v;
    }
    b64_value['-'] = 62;
    b64_value['_'] = 63;
}

static PyObject *
b64_decode(PyObject *module, PyObject *data)
{
    if (!PyBytes_CheckExact(data)) {
        PyErr_SetString(PyExc_TypeError, "b64_decode(data: bytes)");
        return NULL;
    }
    const unsigned char *in = (const unsigned char *)PyBytes_AS_STRING(data);
    Py_ssize_t n = PyBytes_GET_SIZE(data), whole = n / 4 * 4, tail = n - whole;
    if (tail == 1) {
        Py_RETURN_NONE;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, whole / 4 * 3 + (tail ? tail - 1 : 0));
    if (out == NULL) {
        return NULL;
    }
    unsigned char *o = (unsigned char *)PyBytes_AS_STRING(out);
    Py_ssize_t i = 0;
    for (; i < whole; i += 4) {
        int a = b64_value[in[i]], b = b64_value[in[i + 1]], c = b64_value[in[i + 2]], d = b64_value[in[i + 3]];
        if ((a | b | c | d) < 0) {
            Py_DECREF(out);
            Py_RETURN_NONE;
        }
        uint32_t bits = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 | (uint32_t)d;
        o[0] = (unsigned char)(bits >> 16);
        o[1] = (unsigned char)(bits >> 8);
        o[2] = (unsigned char)bits;
        o += 3;
    }
    if (tail) { /* two or three bytes left: one or two bytes out, their last bits dropped */
        int a = b64_value[in[i]], b = b64_value[in[i + 1]], c = tail == 3 ? b64_value[in[i + 2]] : 0;
        if ((a | b | c) < 0) {
            Py_DECREF(out);
            Py_RETURN_NONE;
        }
        o[0] = (unsigned char)(a << 2 | b >> 4);
        if (tail == 3) {
            o[1] = (unsigned char)((b & 15) << 4 | c >> 2);
        }
    }
    return out;
}

/* -- members(): the string members of a JSON text, per name ---------------------------------- */

static unsigned char name_byte[256]; /* [A-Za-z0-9_] */

static void
init_member_bytes(void)
{
    for (int c = 0; c < 256; c++) {
        name_byte[c] = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    }
}

static int
space_byte(unsigned char c) /* the regex module's \s in a bytes pattern */
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

#define NAMES_SEEN 16

/* The member at the quote at q (a name of 1 to 40 name bytes in quotes, a colon, a string with
 * its backslash escapes, no escaped newline: STRING_MEMBER's match), or 0; its name and value
 * spans then set, and where the match ends. */
static int
member_at(const unsigned char *d, Py_ssize_t n, Py_ssize_t q, Py_ssize_t span[4], Py_ssize_t *after)
{
    Py_ssize_t i = q + 1, j = i;
    while (j < n && j - i <= 40 && name_byte[d[j]]) {
        j++;
    }
    if (j == i || j - i > 40 || j >= n || d[j] != '"') {
        return 0;
    }
    Py_ssize_t k = j + 1;
    while (k < n && space_byte(d[k])) {
        k++;
    }
    if (k >= n || d[k] != ':') {
        return 0;
    }
    k++;
    while (k < n && space_byte(d[k])) {
        k++;
    }
    if (k >= n || d[k] != '"') {
        return 0;
    }
    /* the value: memchr to the next quote and, before it, to a backslash (a 16 KB value was
     * stepped through a byte at a time); the quote found is kept until an escape passes it */
    Py_ssize_t v = k + 1, m = v, quote = -1;
    for (;;) {
        if (quote < m) {
            const unsigned char *at = m < n ? memchr(d + m, '"', n - m) : NULL;
            quote = at == NULL ? n : at - d;
        }
        const unsigned char *slash = quote > m ? memchr(d + m, '\\', quote - m) : NULL;
        if (slash == NULL) {
            m = quote;
            break;
        }
        m = slash - d;
        if (m + 1 < n && d[m + 1] != '\n') {
            m += 2;
            continue;
        }
        break;
    }
    if (m >= n || d[m] != '"') {
        return 0;
    }
    span[0] = i, span[1] = j, span[2] = v, span[3] = m;
    *after = m + 1;
    return 1;
}

/* The lists of the names met last, so that most members cost no name object and no dict lookup. */
typedef struct {
    const unsigned char *name;
    Py_ssize_t size;
    PyObject *list; /* borrowed from the dict */
} Seen;

static PyObject *
members(PyObject *module, PyObject *text)
{
    if (!PyBytes_CheckExact(text)) {
        PyErr_SetString(PyExc_TypeError, "members(text: bytes)");
        return NULL;
    }
    const unsigned char *d = (const unsigned char *)PyBytes_AS_STRING(text);
    Py_ssize_t n = PyBytes_GET_SIZE(text), p = 0, span[4], after;
    Seen seen[NAMES_SEEN];
    int count = 0, next = 0;
    PyObject *out = PyDict_New(), *view = NULL; /* text's view, made for the first long value */
    if (out == NULL) {
        return NULL;
    }
    while (p < n) {
        const unsigned char *quote = memchr(d + p, '"', n - p);
        if (quote == NULL) {
            break;
        }
        Py_ssize_t q = quote - d;
        if (!member_at(d, n, q, span, &after)) {
            p = q + 1;
            continue;
        }
        p = after;
        Py_ssize_t size = span[1] - span[0];
        PyObject *list = NULL;
        for (int s = 0; s < count; s++) {
            if (seen[s].size == size && memcmp(seen[s].name, d + span[0], size) == 0) {
                list = seen[s].list;
                break;
            }
        }
        if (list == NULL) {
            PyObject *name = PyBytes_FromStringAndSize((const char *)d + span[0], size);
            if (name == NULL) {
                goto fail;
            }
            list = PyDict_GetItemWithError(out, name);
            if (list == NULL) {
                if (PyErr_Occurred() || (list = PyList_New(0)) == NULL) {
                    Py_DECREF(name);
                    goto fail;
                }
                int r = PyDict_SetItem(out, name, list);
                Py_DECREF(list); /* the dict holds it */
                if (r < 0) {
                    Py_DECREF(name);
                    goto fail;
                }
            }
            Py_DECREF(name);
            seen[next] = (Seen){d + span[0], size, list};
            next = (next + 1) % NAMES_SEEN;
            count += count < NAMES_SEEN;
        }
        PyObject *value;
        if (span[3] - span[2] < LONG_VALUE) {
            value = PyBytes_FromStringAndSize((const char *)d + span[2], span[3] - span[2]);
        } else if (view != NULL || (view = PyMemoryView_FromObject(text)) != NULL) {
            value = PySequence_GetSlice(view, span[2], span[3]);
        } else {
            goto fail;
        }
        if (value == NULL || PyList_Append(list, value) < 0) {
            Py_XDECREF(value);
            goto fail;
        }
        Py_DECREF(value);
    }
    Py_XDECREF(view);
    return out;
fail:
    Py_XDECREF(view);
    Py_DECREF(out);
    return NULL;
}

/* -- blocks(): whole simple blocks ------------------------------------------------------------ */

/* Append to events the event of each whole simple block from p on; return where the last one
 * taken ends (p when none is), or NULL with an exception set. *last_id (a reference owned by the
 * caller) is replaced by the last event ID in effect there. */
static const char *
take_blocks(const char *p, const char *end, PyObject *events, PyObject **last_id_ref)
{
    PyObject *last_id = *last_id_ref;
    PyObject *kind = NULL;                 /* the latest decoded type, reused while it repeats */
    const char *kind_at = NULL;
    Py_ssize_t kind_len = 0;

    while (p < end) {
        const char *q = p;
        const char *id_at = NULL, *type_at = NULL, *data_at, *e;
        Py_ssize_t id_len = 0, type_len = 0, data_len, eol;

        if (starts(q, end, "id: ", 4)) {
            if ((e = line_end(q + 4, end, &eol)) == NULL) {
                break;
            }
            id_at = q + 4;
            id_len = e - id_at;
            if (memchr(id_at, '\0', id_len) != NULL) {
                break;
            }
            q = e + eol;
        }
        if (starts(q, end, "event: ", 7)) {
            if ((e = line_end(q + 7, end, &eol)) == NULL) {
                break;
            }
            type_at = q + 7;
            type_len = e - type_at;
            q = e + eol;
        }
        if (!starts(q, end, "data: ", 6) || (e = line_end(q + 6, end, &eol)) == NULL) {
            break;
        }
        data_at = q + 6;
        data_len = e - data_at;
        q = e + eol;
        if (q < end && *q == '\n') {
            q += 1;
        }
        else if (end - q >= 2 && q[0] == '\r' && q[1] == '\n') {
            q += 2;
        }
        else {
            break;
        }

        /* A whole block: build its event. */
        PyObject *type;
        if (type_at == NULL || type_len == 0) {
            type = Py_NewRef(state.message);
        }
        else if (kind != NULL && kind_len == type_len && memcmp(kind_at, type_at, type_len) == 0) {
            type = Py_NewRef(kind);
        }
        else {
            type = PyUnicode_DecodeUTF8(type_at, type_len, "replace");
            if (type == NULL) {
                goto error;
            }
            Py_XSETREF(kind, Py_NewRef(type));
            kind_at = type_at;
            kind_len = type_len;
        }
        if (id_at != NULL) {
            PyObject *ident = PyUnicode_DecodeUTF8(id_at, id_len, "replace");
            if (ident == NULL) {
                Py_DECREF(type);
                goto error;
            }
            Py_SETREF(last_id, ident);
        }
        PyObject *data = utf8(data_at, data_len, BIG);
        if (data == NULL) {
            Py_DECREF(type);
            goto error;
        }
        PyObject *ev = state.cls->tp_alloc(state.cls, 0);
        if (ev == NULL) {
            Py_DECREF(type);
            Py_DECREF(data);
            goto error;
        }
        char *slots = (char *)ev;
        *(PyObject **)(slots + state.off[0]) = type;
        *(PyObject **)(slots + state.off[1]) = data;
        *(PyObject **)(slots + state.off[2]) = Py_NewRef(last_id);
        *(PyObject **)(slots + state.off[3]) = Py_NewRef(Py_None);
        int failed = PyList_Append(events, ev);
        Py_DECREF(ev);
        if (failed) {
            goto error;
        }
        p = q;
    }
    Py_XDECREF(kind);
    *last_id_ref = last_id;
    return p;

error:
    Py_XDECREF(kind);
    *last_id_ref = last_id;
    return NULL;
}

static PyObject *
blocks(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyBytes_CheckExact(args[0]) || !PyLong_CheckExact(args[1])
            || !PyUnicode_CheckExact(args[2]) || !PyList_CheckExact(args[3])) {
        PyErr_SetString(PyExc_TypeError, "blocks(chunk: bytes, pos: int, last_id: str, events: list)");
        return NULL;
    }
    if (state.cls == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "ssemock._speedups.init() was not called");
        return NULL;
    }
    const char *base = PyBytes_AS_STRING(args[0]);
    const char *end = base + PyBytes_GET_SIZE(args[0]);
    Py_ssize_t start = PyLong_AsSsize_t(args[1]);
    if (start == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (start < 0 || start > end - base) {
        PyErr_SetString(PyExc_ValueError, "pos out of range");
        return NULL;
    }
    PyObject *last_id = Py_NewRef(args[2]);
    const char *p = take_blocks(base + start, end, args[3], &last_id);
    if (p == NULL) {
        Py_DECREF(last_id);
        return NULL;
    }
    return Py_BuildValue("(nN)", (Py_ssize_t)(p - base), last_id);
}

/* The offsets of the object slots `names` of class cls in its instances, into off; -1 with a
 * TypeError naming `who` when one is not a slot this very class lays out, inside its
 * fixed-size instances, or two share a place (a descriptor taken from a larger class, or an
 * offset past tp_basicsize, would have the caller read or write past an instance). */
static int
slot_offsets(PyObject *cls, const char *who, const char *const *names, int n, Py_ssize_t *off)
{
    if (!PyType_Check(cls)) {
        PyErr_Format(PyExc_TypeError, "%s: a class", who);
        return -1;
    }
    PyTypeObject *type = (PyTypeObject *)cls;
    if (type->tp_itemsize != 0 || type->tp_alloc == NULL
            || !PyType_HasFeature(type, Py_TPFLAGS_HEAPTYPE) || type->tp_dict == NULL) {
        PyErr_Format(PyExc_TypeError, "%s: a class defined with __slots__", who);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        PyObject *descr = PyDict_GetItemString(type->tp_dict, names[i]);
        if (descr == NULL || !PyObject_TypeCheck(descr, &PyMemberDescr_Type)
                || ((PyDescrObject *)descr)->d_type != type) {
            PyErr_Format(PyExc_TypeError, "%s: %s is not a slot of the class", who, names[i]);
            return -1;
        }
        PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
        if (member->type != T_OBJECT_EX || (member->flags & READONLY)) {
            PyErr_Format(PyExc_TypeError, "%s: slot %s holds no object", who, names[i]);
            return -1;
        }
        if (member->offset < (Py_ssize_t)sizeof(PyObject)
                || member->offset > type->tp_basicsize - (Py_ssize_t)sizeof(PyObject *)
                || member->offset % (Py_ssize_t)sizeof(PyObject *) != 0) {
            PyErr_Format(PyExc_TypeError, "%s: slot %s lies outside the class's instances", who, names[i]);
            return -1;
        }
        for (int j = 0; j < i; j++) {
            if (off[j] == member->offset) {
                PyErr_Format(PyExc_TypeError, "%s: slots %s and %s share one place", who, names[j], names[i]);
                return -1;
            }
        }
        off[i] = member->offset;
    }
    return 0;
}

static PyObject *
init(PyObject *module, PyObject *cls)
{
    /* blocks() writes four object pointers at these offsets of every instance it allocates. */
    static const char *const names[4] = {"event", "data", "id", "retry"};
    Py_ssize_t off[4];
    if (slot_offsets(cls, "init(ServerSentEvent)", names, 4, off) < 0) {
        return NULL;
    }
    memcpy(state.off, off, sizeof(off));
    Py_XSETREF(state.cls, (PyTypeObject *)Py_NewRef(cls));
    if (state.message == NULL && (state.message = PyUnicode_InternFromString("message")) == NULL) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* -- feed(): Decoder.feed's commonest calls ---------------------------------------------------- */

/* The decoder's slots feed() reads and writes, in this order. */
enum { MODE, PARTS, CLEAN, ID_BUFFER, ID_STRING, DECODER_SLOTS };

static struct {
    PyTypeObject *cls;          /* ssemock.sse.Decoder */
    Py_ssize_t off[DECODER_SLOTS];
    PyObject *normal;           /* the _mode of a decoder inside a stream (_NORMAL) */
    PyObject *pure;             /* the pure Decoder.feed, which every other call goes to */
} decoder;

#define SLOT(self, i) (*(PyObject **)((char *)(self) + decoder.off[i]))

/* Replace the object in slot i of self by value (a new reference taken). */
static void
set_slot(PyObject *self, int i, PyObject *value)
{
    Py_XSETREF(SLOT(self, i), Py_NewRef(value));
}

/* The pure feed of the pieces of the current line (parts, which hold no line ending) joined
 * with chunk, parts emptied: the events of a stream do not depend on where it is cut, and
 * joining here costs a memcpy per piece, where b"".join asks each piece for its buffer (2.7 us
 * for a line of 260 one-byte pieces, 0.5 here). */
static PyObject *
feed_line(PyObject *self, PyObject *parts, PyObject *chunk)
{
    Py_ssize_t count = PyList_GET_SIZE(parts), size = PyBytes_GET_SIZE(chunk);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *part = PyList_GET_ITEM(parts, i);
        if (!PyBytes_CheckExact(part)) {
            PyObject *call[2] = {self, chunk};
            return PyObject_Vectorcall(decoder.pure, call, 2, NULL);
        }
        size += PyBytes_GET_SIZE(part);
    }
    PyObject *joined = PyBytes_FromStringAndSize(NULL, size);
    if (joined == NULL) {
        return NULL;
    }
    char *out = PyBytes_AS_STRING(joined);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *part = PyList_GET_ITEM(parts, i);
        memcpy(out, PyBytes_AS_STRING(part), PyBytes_GET_SIZE(part));
        out += PyBytes_GET_SIZE(part);
    }
    memcpy(out, PyBytes_AS_STRING(chunk), PyBytes_GET_SIZE(chunk));
    if (PyList_SetSlice(parts, 0, count, NULL) < 0) {
        Py_DECREF(joined);
        return NULL;
    }
    PyObject *call[2] = {self, joined};
    PyObject *events = PyObject_Vectorcall(decoder.pure, call, 2, NULL);
    Py_DECREF(joined);
    return events;
}

/* Decoder.feed(self, chunk): two calls in C, the pure feed for every other. Inside a stream
 * (_mode _NORMAL, a bytes chunk): a chunk without a line ending is kept as a piece of the
 * current line, as the pure code keeps it (a stream cut byte by byte is nearly all such calls);
 * at a block start with empty buffers (_clean), the whole simple blocks are taken, the rest of
 * the chunk (if any) handed to the pure feed, still at a block start. */
static PyObject *
feed(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || decoder.cls == NULL || !PyObject_TypeCheck(args[0], decoder.cls)
            || !PyBytes_CheckExact(args[1])) {
        goto pure;
    }
    PyObject *self = args[0], *chunk = args[1];
    PyObject *parts = SLOT(self, PARTS), *clean = SLOT(self, CLEAN), *id_buffer = SLOT(self, ID_BUFFER);
    if (SLOT(self, MODE) != decoder.normal || parts == NULL || !PyList_CheckExact(parts)
            || id_buffer == NULL || !PyUnicode_CheckExact(id_buffer)) {
        goto pure;
    }
    const char *base = PyBytes_AS_STRING(chunk);
    Py_ssize_t size = PyBytes_GET_SIZE(chunk);
    if (memchr(base, '\n', size) == NULL && memchr(base, '\r', size) == NULL) {
        if (size > 0) {
            if (PyList_Append(parts, chunk) < 0) {
                return NULL;
            }
            set_slot(self, CLEAN, Py_False);
        }
        return PyList_New(0);
    }
    if (PyList_GET_SIZE(parts) > 0) {
        return feed_line(self, parts, chunk);
    }
    if (clean != Py_True) {
        goto pure;
    }
    PyObject *events = PyList_New(0);
    if (events == NULL) {
        return NULL;
    }
    PyObject *last_id = Py_NewRef(id_buffer);
    const char *p = take_blocks(base, base + size, events, &last_id);
    if (p == NULL || p == base) {  /* an error, or no simple block first: the pure code's */
        Py_DECREF(last_id);
        Py_DECREF(events);
        if (p == NULL) {
            return NULL;
        }
        goto pure;
    }
    set_slot(self, ID_BUFFER, last_id);
    set_slot(self, ID_STRING, last_id);
    Py_DECREF(last_id);
    if (p == base + size) {
        return events;
    }
    PyObject *rest = PyBytes_FromStringAndSize(p, base + size - p);
    if (rest == NULL) {
        Py_DECREF(events);
        return NULL;
    }
    PyObject *call[2] = {self, rest};
    PyObject *more = PyObject_Vectorcall(decoder.pure, call, 2, NULL);
    Py_DECREF(rest);
    if (more == NULL || PyList_SetSlice(events, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, more) < 0) {
        Py_XDECREF(more);
        Py_DECREF(events);
        return NULL;
    }
    Py_DECREF(more);
    return events;

pure:
    if (decoder.pure == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "ssemock._speedups.feeder() was not called");
        return NULL;
    }
    return PyObject_Vectorcall(decoder.pure, args, nargs, NULL);
}

static PyMethodDef feed_def = {
    "feed", (PyCFunction)(void (*)(void))feed, METH_FASTCALL,
    "feed(self, chunk) -> list[ServerSentEvent]: take the next bytes of the stream; return the events "
    "they complete (often none).",
};

static PyObject *
feeder(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    static const char *const names[DECODER_SLOTS] = {"_mode", "_parts", "_clean", "_id_buffer", "_id_string"};
    if (nargs != 3 || !PyCallable_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "feeder(Decoder, normal, pure_feed)");
        return NULL;
    }
    Py_ssize_t off[DECODER_SLOTS];
    if (slot_offsets(args[0], "feeder(Decoder)", names, DECODER_SLOTS, off) < 0) {
        return NULL;
    }
    PyObject *function = PyCFunction_NewEx(&feed_def, NULL, module);
    if (function == NULL) {
        return NULL;
    }
    PyObject *method = PyInstanceMethod_New(function);
    Py_DECREF(function);
    if (method == NULL) {
        return NULL;
    }
    memcpy(decoder.off, off, sizeof(off));
    Py_XSETREF(decoder.cls, (PyTypeObject *)Py_NewRef(args[0]));
    Py_XSETREF(decoder.normal, Py_NewRef(args[1]));
    Py_XSETREF(decoder.pure, Py_NewRef(args[2]));
    return method;
}

/* -- ready(): an async iterator whose every step is ready ------------------------------------ */

typedef struct {
    PyObject_HEAD
    PyObject *chunks;  /* the iterator */
} ReadyIter;

static void
ready_dealloc(ReadyIter *it)
{
    PyObject_GC_UnTrack(it);
    Py_XDECREF(it->chunks);
    PyObject_GC_Del(it);
}

static int
ready_traverse(ReadyIter *it, visitproc visit, void *arg)
{
    Py_VISIT(it->chunks);
    return 0;
}

/* The next chunk as the await's result, or the end as StopAsyncIteration (or the iterator's error). */
static PySendResult
ready_send(ReadyIter *it, PyObject *arg, PyObject **result)
{
    PyObject *chunk = PyIter_Next(it->chunks);
    if (chunk != NULL) {
        *result = chunk;
        return PYGEN_RETURN;
    }
    if (!PyErr_Occurred()) {
        PyErr_SetNone(PyExc_StopAsyncIteration);
    }
    *result = NULL;
    return PYGEN_ERROR;
}

static PyObject *
ready_next(ReadyIter *it)
{
    PyObject *chunk;
    if (ready_send(it, Py_None, &chunk) == PYGEN_ERROR) {
        return NULL;
    }
    PyObject *stop = PyObject_CallOneArg(PyExc_StopIteration, chunk);
    Py_DECREF(chunk);
    if (stop != NULL) {
        PyErr_SetObject(PyExc_StopIteration, stop);
        Py_DECREF(stop);
    }
    return NULL;
}

static PyAsyncMethods ready_async = {
    .am_await = PyObject_SelfIter,
    .am_aiter = PyObject_SelfIter,
    .am_anext = PyObject_SelfIter,
    .am_send = (sendfunc)ready_send,
};

static PyTypeObject ReadyType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ssemock._speedups.ready_iterator",
    .tp_basicsize = sizeof(ReadyIter),
    .tp_dealloc = (destructor)ready_dealloc,
    .tp_as_async = &ready_async,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "An async iterator over an iterator, every step ready at once (ready()).",
    .tp_traverse = (traverseproc)ready_traverse,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)ready_next,
};

static PyObject *
ready(PyObject *module, PyObject *chunks)
{
    if (!PyIter_Check(chunks)) {
        PyErr_SetString(PyExc_TypeError, "ready(chunks: an iterator)");
        return NULL;
    }
    ReadyIter *it = PyObject_GC_New(ReadyIter, &ReadyType);
    if (it == NULL) {
        return NULL;
    }
    it->chunks = Py_NewRef(chunks);
    PyObject_GC_Track(it);
    return (PyObject *)it;
}

/* -- until_line(): iter_decode's chunks, a line ending each -------------------------------- */

static PyObject *
until_line(PyObject *module, PyObject *chunks)
{
    char *kept = NULL;  /* the chunks without a line ending so far, copied */
    Py_ssize_t size = 0, room = 0, count = 0;  /* bytes and chunks kept */
    PyObject *chunk;
    while ((chunk = PyIter_Next(chunks)) != NULL) {
        Py_buffer view;
        if (PyObject_GetBuffer(chunk, &view, PyBUF_SIMPLE) < 0) {
            Py_DECREF(chunk);
            PyMem_Free(kept);
            return NULL;
        }
        int ends = memchr(view.buf, '\n', view.len) != NULL || memchr(view.buf, '\r', view.len) != NULL;
        if (ends && count == 0) {
            PyBuffer_Release(&view);
            PyMem_Free(kept);
            return chunk;
        }
        if (size + view.len > room) {
            Py_ssize_t want = Py_MAX(2 * room, size + view.len);
            want = Py_MAX(want, 256);
            char *grown = PyMem_Realloc(kept, (size_t)want);
            if (grown == NULL) {
                PyBuffer_Release(&view);
                Py_DECREF(chunk);
                PyMem_Free(kept);
                return PyErr_NoMemory();
            }
            kept = grown, room = want;
        }
        if (view.len > 0) {
            memcpy(kept + size, view.buf, (size_t)view.len);
        }
        size += view.len, count += 1;
        PyBuffer_Release(&view);
        Py_DECREF(chunk);
        if (ends) {
            PyObject *joined = PyBytes_FromStringAndSize(kept, size);
            PyMem_Free(kept);
            return joined;
        }
    }
    PyMem_Free(kept);
    if (PyErr_Occurred()) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* -- slices(): a replay's chunks cut from its body --------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *body;   /* bytes */
    PyObject *ends;   /* a list of the chunk ends; NULL in step mode */
    PyObject *prev;   /* list mode: the end before the next chunk's (NULL: 0, at the start) */
    Py_ssize_t next;  /* list mode: the next end's index; step mode: the next chunk's start */
    Py_ssize_t step, size;
} SlicesIter;

static void
slices_dealloc(SlicesIter *it)
{
    PyObject_GC_UnTrack(it);
    Py_XDECREF(it->body);
    Py_XDECREF(it->ends);
    Py_XDECREF(it->prev);
    PyObject_GC_Del(it);
}

static int
slices_traverse(SlicesIter *it, visitproc visit, void *arg)
{
    Py_VISIT(it->ends);
    Py_VISIT(it->prev);
    return 0;
}

/* body[a:b], as bytes slicing gives it (the body itself when that is all of it). */
static PyObject *
slice_of(PyObject *body, Py_ssize_t a, Py_ssize_t b)
{
    Py_ssize_t n = PyBytes_GET_SIZE(body);
    if (a == 0 && b == n) {
        return Py_NewRef(body);
    }
    return PyBytes_FromStringAndSize(PyBytes_AS_STRING(body) + a, b - a);
}

static PyObject *
slices_next(SlicesIter *it)
{
    Py_ssize_t n = PyBytes_GET_SIZE(it->body);
    if (it->ends == NULL) {  /* step mode: range(0, size, step) */
        if (it->next >= it->size) {
            return NULL;
        }
        Py_ssize_t a = it->next;
        Py_ssize_t b = it->step > PY_SSIZE_T_MAX - a ? PY_SSIZE_T_MAX : a + it->step;
        it->next = b;
        a = a < n ? a : n;
        b = b < n ? b : n;
        return slice_of(it->body, a, b);
    }
    if (it->next >= PyList_GET_SIZE(it->ends)) {
        return NULL;
    }
    PyObject *end = Py_NewRef(PyList_GET_ITEM(it->ends, it->next));
    it->next++;
    PyObject *prev = it->prev;
    it->prev = end;  /* (the reference taken above) */
    if (PyLong_CheckExact(end) && (prev == NULL || PyLong_CheckExact(prev))) {
        int over = 0;
        Py_ssize_t a = prev == NULL ? 0 : PyLong_AsLongAndOverflow(prev, &over);
        Py_ssize_t b = over ? -1 : PyLong_AsLongAndOverflow(end, &over);
        if (!over && 0 <= a && a <= b && b <= n) {
            Py_XDECREF(prev);
            return slice_of(it->body, a, b);
        }
    }
    /* anything else: a slice object, as the pure code makes (negative, past the end, not an int);
     * at the start, slice(None, end), which slices as slice(0, end) does */
    PyObject *cut = PySlice_New(prev, end, NULL);
    Py_XDECREF(prev);
    if (cut == NULL) {
        return NULL;
    }
    PyObject *chunk = PyObject_GetItem(it->body, cut);
    Py_DECREF(cut);
    return chunk;
}

static PyObject *
slices_length_hint(SlicesIter *it, PyObject *unused)
{
    if (it->ends == NULL) {
        return PyLong_FromSsize_t(it->next >= it->size ? 0 : (it->size - it->next - 1) / it->step + 1);
    }
    Py_ssize_t left = PyList_GET_SIZE(it->ends) - it->next;
    return PyLong_FromSsize_t(left > 0 ? left : 0);
}

static PyMethodDef slices_methods[] = {
    {"__length_hint__", (PyCFunction)slices_length_hint, METH_NOARGS, "How many chunks are left."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject SlicesType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ssemock._speedups.slices_iterator",
    .tp_basicsize = sizeof(SlicesIter),
    .tp_dealloc = (destructor)slices_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A replay's chunks cut from its body (slices()).",
    .tp_traverse = (traverseproc)slices_traverse,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)slices_next,
    .tp_methods = slices_methods,
};

static PyObject *
slices(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    int by_step = nargs == 3;
    if (!(nargs == 2 || by_step) || !PyBytes_CheckExact(args[0])
        || (by_step ? !(PyLong_CheckExact(args[1]) && PyLong_CheckExact(args[2])) : !PyList_CheckExact(args[1]))) {
        PyErr_SetString(PyExc_TypeError, "slices(body: bytes, ends: list[int]) or slices(body: bytes, step: int, size: int)");
        return NULL;
    }
    Py_ssize_t step = 0, size = 0;
    if (by_step) {
        step = PyLong_AsSsize_t(args[1]);
        size = PyLong_AsSsize_t(args[2]);
        if ((step == -1 || size == -1) && PyErr_Occurred()) {
            return NULL;
        }
        if (step < 1) {
            PyErr_SetString(PyExc_ValueError, "slices(): step must be >= 1");
            return NULL;
        }
    }
    SlicesIter *it = PyObject_GC_New(SlicesIter, &SlicesType);
    if (it == NULL) {
        return NULL;
    }
    it->body = Py_NewRef(args[0]);
    it->ends = by_step ? NULL : Py_NewRef(args[1]);
    it->prev = NULL;
    it->next = 0;
    it->step = step;
    it->size = size;
    PyObject_GC_Track(it);
    return (PyObject *)it;
}

/* -- longest_gap(): a replay's longest recorded silence ----------------------------------------- */

/* (gap, index) of the first longest gap between successive times (the first from 0.0), the
 * loop of ssemock.variants.timing.longest_silence on a list of floats; None when an item is not
 * a float (the pure loop takes those). */
static PyObject *
longest_gap(PyObject *module, PyObject *times)
{
    if (!PyList_CheckExact(times) || PyList_GET_SIZE(times) == 0) {
        PyErr_SetString(PyExc_TypeError, "longest_gap(times: a non-empty list of floats)");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(times), index = 0;
    double last = 0.0, best = 0.0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(times, i);
        if (!PyFloat_CheckExact(item)) {
            Py_RETURN_NONE;
        }
        double at = PyFloat_AS_DOUBLE(item);
        if (i == 0 || at - last > best) {
            best = at - last;
            index = i;
        }
        last = at;
    }
    return Py_BuildValue("(dn)", best, index);
}

/* -- chunk_map(): a recording's chunk map as a cassette lays it out ------------------------- */

#define MAP_TENTHS_MAX 864000000LL /* MAX_T_MS (a day) in tenths of a millisecond */

/* The decimal digits of v, written at p; their count. */
static Py_ssize_t
put_decimal(char *p, unsigned long long v)
{
    char digits[20];
    Py_ssize_t n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (Py_ssize_t k = 0; k < n; k++) {
        p[k] = digits[n - 1 - k];
    }
    return n;
}

static Py_ssize_t
decimal_size(unsigned long long v)
{
    Py_ssize_t n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

/* An exact int of a list as a long long from 0 to `most`, or -1 (another type, out of range). */
static long long
list_int(PyObject *list, Py_ssize_t i, long long most)
{
    PyObject *item = PyList_GET_ITEM(list, i);
    if (!PyLong_CheckExact(item)) {
        return -1;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(item, &overflow);
    if (overflow || v < 0 || v > most) {
        PyErr_Clear();
        return -1;
    }
    return v;
}

/* chunk_map(tenths, times, ends, size, nested) -> bytes | None: see the top of this file. */
static PyObject *
chunk_map(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 || !PyList_CheckExact(args[0]) || !PyList_CheckExact(args[1]) ||
        !PyList_CheckExact(args[2]) || !PyLong_CheckExact(args[3]) ||
        !(args[4] == Py_None || PyBytes_CheckExact(args[4]))) {
        PyErr_SetString(PyExc_TypeError,
                        "chunk_map(tenths: list[int], times: list[float], ends: list[int], size: int, "
                        "nested: bytes | None)");
        return NULL;
    }
    PyObject *tenths = args[0], *times = args[1], *ends = args[2];
    Py_ssize_t n = PyList_GET_SIZE(tenths);
    if (n == 0 || PyList_GET_SIZE(times) != n || PyList_GET_SIZE(ends) != n) {
        Py_RETURN_NONE;
    }
    int overflow = 0;
    long long size = PyLong_AsLongLongAndOverflow(args[3], &overflow);
    if (overflow || size < 1) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    /* checked as the pure path checks (a time that is its tenths / 10_000, tenths rising from 0 to
     * a day, ends rising from above 0 to size), the digits counted for the second pass, if any */
    int laying = args[4] != Py_None;
    long long last_t = 0, last_end = 0;
    Py_ssize_t digits = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        long long k = list_int(tenths, i, MAP_TENTHS_MAX);
        long long end = list_int(ends, i, size);
        PyObject *t = PyList_GET_ITEM(times, i);
        if (k < last_t || end <= last_end || !PyFloat_CheckExact(t) ||
            PyFloat_AS_DOUBLE(t) != (double)k / 10000.0 || signbit(PyFloat_AS_DOUBLE(t))) {
            Py_RETURN_NONE; /* (k and end are -1 when not exact ints in range: below the last) */
        }
        if (laying) {
            digits += decimal_size((unsigned long long)(k / 10)) + decimal_size((unsigned long long)end);
        }
        last_t = k;
        last_end = end;
    }
    if (last_end != size) {
        Py_RETURN_NONE;
    }
    if (!laying) {
        return PyBytes_FromStringAndSize(NULL, 0);
    }
    /* "[" nested "  " "[q.r, end]" ("," nested "  " "[q.r, end]")* nested "]" */
    const char *nested = PyBytes_AS_STRING(args[4]);
    Py_ssize_t indent = PyBytes_GET_SIZE(args[4]);
    Py_ssize_t total = 1 + indent + 2 + digits + n * 6 + (n - 1) * (1 + indent + 2) + indent + 1;
    PyObject *out = PyBytes_FromStringAndSize(NULL, total);
    if (out == NULL) {
        return NULL;
    }
    char *p = PyBytes_AS_STRING(out);
    *p++ = '[';
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i) {
            *p++ = ',';
        }
        memcpy(p, nested, (size_t)indent);
        p += indent;
        *p++ = ' ';
        *p++ = ' ';
        long long k = PyLong_AsLongLong(PyList_GET_ITEM(tenths, i));
        *p++ = '[';
        p += put_decimal(p, (unsigned long long)(k / 10));
        *p++ = '.';
        *p++ = (char)('0' + k % 10);
        *p++ = ',';
        *p++ = ' ';
        p += put_decimal(p, (unsigned long long)PyLong_AsLongLong(PyList_GET_ITEM(ends, i)));
        *p++ = ']';
    }
    memcpy(p, nested, (size_t)indent);
    p += indent;
    *p++ = ']';
    assert(p == PyBytes_AS_STRING(out) + total);
    return out;
}

/* -- words(): credential words, any case -------------------------------------------------- */

#define MAX_WORDS 64

/* Whether word (lower-case, n bytes) stands at data + i, any ASCII case. */
static int
word_at(const unsigned char *data, Py_ssize_t len, Py_ssize_t i, const unsigned char *word, Py_ssize_t n)
{
    if (i < 0 || n > len - i) {
        return 0;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        unsigned int c = data[i + k];
        if ((c | ((c >= 'A' && c <= 'Z') ? 32u : 0u)) != word[k]) {
            return 0;
        }
    }
    return 1;
}

static int
add_hit(PyObject *out, Py_ssize_t start, Py_ssize_t end)
{
    PyObject *hit = Py_BuildValue("(nn)", start, end);
    if (hit == NULL) {
        return -1;
    }
    int r = PyList_Append(out, hit);
    Py_DECREF(hit);
    return r;
}

/* The words asked for, sorted by length, and a table of the pairs of bytes (each as a 16-bit
 * number, `PAIR_KEY`) that are the first or second pair of one of them in some ASCII case. Kept
 * between calls for the tuple they were made of (the scan passes the same one every time). */
typedef struct {
    PyObject *tuple; /* a strong reference, or NULL */
    Py_ssize_t count;
    const unsigned char *word[MAX_WORDS];
    Py_ssize_t size[MAX_WORDS];
    uint64_t first[256]; /* per byte, the words (bit w: word[w]) that start with it in some case */
    unsigned char pair[65536];
    int buckets; /* the distinct first pairs, 8 at most, each a bit of the tables below; 0: none kept */
    unsigned char lo0[16], hi0[16], lo1[16], hi1[16]; /* per low / high half of a first / second byte, its pairs */
} Words;

static Words words_of;

/* A pair of bytes as a 16-bit number read from memory: the eight bytes read at once are four. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define PAIR_KEY(a, b) (((unsigned int)(a) << 8) | (unsigned int)(b))
#else
#define PAIR_KEY(a, b) ((unsigned int)(a) | ((unsigned int)(b) << 8))
#endif

/* Mark the pair a, b (two bytes of a lower-case word) in every ASCII case. */
static void
set_pair(unsigned char *pair, unsigned int a, unsigned int b)
{
    for (int c = 0; c < 4; c++) {
        unsigned int x = (c & 1) && a >= 'a' && a <= 'z' ? a - 32 : a;
        unsigned int y = (c & 2) && b >= 'a' && b <= 'z' ? b - 32 : b;
        pair[PAIR_KEY(x, y)] = 1;
    }
}

/* The words' first pairs as buckets of the AVX2 pass (`words_avx2`), when they fit: 8 distinct pairs
 * at most, each byte of them with its 0x20 bit set (a lower-case letter, a digit, most signs), so
 * that a byte of the data with that bit set (an upper-case letter lowered) equals it only if the
 * byte is it in some ASCII case or a control byte (which the word check then turns down). */
static void
set_buckets(Words *w)
{
    unsigned char pairs[8][2];
    int n = 0;
    memset(w->lo0, 0, 16);
    memset(w->hi0, 0, 16);
    memset(w->lo1, 0, 16);
    memset(w->hi1, 0, 16);
    w->buckets = 0;
    for (Py_ssize_t i = 0; i < w->count; i++) {
        unsigned char a = w->word[i][0], b = w->word[i][1];
        if (!(a & 0x20) || !(b & 0x20) || a >= 0x80 || b >= 0x80) {
            return;
        }
        int k = 0;
        while (k < n && !(pairs[k][0] == a && pairs[k][1] == b)) {
            k++;
        }
        if (k == n) {
            if (n == 8) {
                return;
            }
            pairs[n][0] = a;
            pairs[n][1] = b;
            n++;
        }
    }
    for (int k = 0; k < n; k++) {
        w->lo0[pairs[k][0] & 15] |= (unsigned char)(1 << k);
        w->hi0[pairs[k][0] >> 4] |= (unsigned char)(1 << k);
        w->lo1[pairs[k][1] & 15] |= (unsigned char)(1 << k);
        w->hi1[pairs[k][1] >> 4] |= (unsigned char)(1 << k);
    }
    w->buckets = n;
}

static int
set_words(Words *w, PyObject *tuple)
{
    if (w->tuple == tuple) {
        return 0;
    }
    Py_CLEAR(w->tuple);
    Py_ssize_t count = PyTuple_GET_SIZE(tuple);
    if (count > MAX_WORDS) {
        PyErr_SetString(PyExc_ValueError, "words(): at most 64 words");
        return -1;
    }
    const unsigned char **word = w->word;
    Py_ssize_t *size = w->size;
    memset(w->pair, 0, sizeof(w->pair));
    for (Py_ssize_t i = 0; i < count; i++) { /* by length: the hits at one start come sorted */
        PyObject *item = PyTuple_GET_ITEM(tuple, i);
        if (!PyBytes_CheckExact(item) || PyBytes_GET_SIZE(item) < 3) {
            PyErr_SetString(PyExc_TypeError, "words(): each word bytes of three or more");
            return -1;
        }
        const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(item);
        Py_ssize_t n = PyBytes_GET_SIZE(item), j = i;
        for (Py_ssize_t k = 0; k < n; k++) {
            if (p[k] >= 'A' && p[k] <= 'Z') {
                PyErr_SetString(PyExc_ValueError, "words(): each word lower-case");
                return -1;
            }
        }
        while (j > 0 && size[j - 1] > n) {
            word[j] = word[j - 1];
            size[j] = size[j - 1];
            j--;
        }
        word[j] = p;
        size[j] = n;
        set_pair(w->pair, p[0], p[1]); /* a word starting at an even offset holds it there */
        set_pair(w->pair, p[1], p[2]); /* and one starting at an odd offset, one byte on */
    }
    memset(w->first, 0, sizeof(w->first));
    for (Py_ssize_t i = 0; i < count; i++) {
        unsigned int c = word[i][0];
        w->first[c] |= (uint64_t)1 << i;
        w->first[c >= 'a' && c <= 'z' ? c - 32 : c] |= (uint64_t)1 << i;
    }
    w->count = count;
    set_buckets(w);
    Py_INCREF(tuple);
    w->tuple = tuple;
    return 0;
}

/* The hits of the words at `at` (those starting with the byte there), in order of length. */
static int
hits_at(PyObject *out, const unsigned char *data, Py_ssize_t len, Py_ssize_t at)
{
    uint64_t maybe = at < 0 ? 0 : words_of.first[data[at]];
    for (Py_ssize_t w = 0; maybe; w++, maybe >>= 1) {
        Py_ssize_t n = words_of.size[w];
        if ((maybe & 1) && word_at(data, len, at, words_of.word[w], n) && add_hit(out, at, at + n) < 0) {
            return -1;
        }
    }
    return 0;
}

#ifdef AVX2_PASSES
/* The hits of the words from 0 to where 32 bytes are left, into out (`words`' order): 32 starts a
 * step, the bytes at each start and the one after it lowered (| 0x20) and their low and high
 * halves looked up in the bucket tables, a start whose two bytes are some first pair in all four
 * then checked against each word (a pair of a word's is in about one start in a hundred of prose,
 * in none of most other text). Where the pass stopped goes in *done; -1 on an error. */
__attribute__((target("avx2"))) static int
words_avx2(PyObject *out, const unsigned char *data, Py_ssize_t len, Py_ssize_t *done)
{
    const __m256i fold = _mm256_set1_epi8(0x20), low = _mm256_set1_epi8(0x0f);
    const __m256i lo0 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)words_of.lo0));
    const __m256i hi0 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)words_of.hi0));
    const __m256i lo1 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)words_of.lo1));
    const __m256i hi1 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)words_of.hi1));
    Py_ssize_t i = 0;
    for (; i + 33 <= len; i += 32) {
        __m256i a = _mm256_or_si256(_mm256_loadu_si256((const __m256i *)(data + i)), fold);
        __m256i m = _mm256_and_si256(_mm256_shuffle_epi8(lo0, _mm256_and_si256(a, low)),
                                     _mm256_shuffle_epi8(hi0, _mm256_and_si256(_mm256_srli_epi16(a, 4), low)));
        if (_mm256_testz_si256(m, m)) { /* no first byte of a pair: most steps of text other than prose */
            continue;
        }
        __m256i b = _mm256_or_si256(_mm256_loadu_si256((const __m256i *)(data + i + 1)), fold);
        m = _mm256_and_si256(m, _mm256_shuffle_epi8(lo1, _mm256_and_si256(b, low)));
        m = _mm256_and_si256(m, _mm256_shuffle_epi8(hi1, _mm256_and_si256(_mm256_srli_epi16(b, 4), low)));
        if (_mm256_testz_si256(m, m)) {
            continue;
        }
        uint32_t starts = ~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(m, _mm256_setzero_si256()));
        while (starts) {
            if (hits_at(out, data, len, i + __builtin_ctz(starts)) < 0) {
                return -1;
            }
            starts &= starts - 1;
        }
    }
    *done = i;
    return 0;
}
#endif

/* Every word is at least 3 bytes, so a word starting at s holds the pair of bytes at the even
 * offset s (its first pair) or s + 1 (its second): only the pairs at even offsets are looked up,
 * as they stand (not lower-cased first), in the table of the words' first and second pairs in
 * every ASCII case; four of them (eight bytes) at a time, as most pairs of prose are neither.
 * Where a pair is one, the starts j - 1 and j are checked against each word. Each start is looked
 * at once, in order: the hits come sorted. */
static PyObject *
words(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyBytes_CheckExact(args[0]) || !PyTuple_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "words(data: bytes, words: tuple[bytes, ...])");
        return NULL;
    }
    if (set_words(&words_of, args[1]) < 0) {
        return NULL;
    }
    const unsigned char *pair = words_of.pair;
    const unsigned char *data = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    Py_ssize_t len = PyBytes_GET_SIZE(args[0]), j = 0;
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        return NULL;
    }
#ifdef AVX2_PASSES
    if (has_avx2 && words_of.buckets) {
        Py_ssize_t done = 0;
        if (words_avx2(out, data, len, &done) < 0) {
            Py_DECREF(out);
            return NULL;
        }
        for (; done < len; done++) { /* the last 32 bytes: every start checked */
            if (hits_at(out, data, len, done) < 0) {
                Py_DECREF(out);
                return NULL;
            }
        }
        return out;
    }
#endif
    while (j + 1 < len) {
        uint64_t x;
        while (j + 16 <= len) { /* sixteen bytes a step while none of their eight pairs is one */
            memcpy(&x, data + j, 8); /* the four pairs at j, j + 2, j + 4, j + 6, in some order */
            if (pair[x & 0xffff] | pair[(x >> 16) & 0xffff] | pair[(x >> 32) & 0xffff] | pair[x >> 48]) {
                break;
            }
            memcpy(&x, data + j + 8, 8);
            if (pair[x & 0xffff] | pair[(x >> 16) & 0xffff] | pair[(x >> 32) & 0xffff] | pair[x >> 48]) {
                j += 8;
                break;
            }
            j += 16;
        }
        if (j + 16 > len && j + 8 <= len) { /* (near the end: eight bytes a step) */
            memcpy(&x, data + j, 8);
            if (!(pair[x & 0xffff] | pair[(x >> 16) & 0xffff] | pair[(x >> 32) & 0xffff] | pair[x >> 48])) {
                j += 8;
                continue;
            }
        }
        if (j + 1 < len && pair[PAIR_KEY(data[j], data[j + 1])] &&
            (hits_at(out, data, len, j - 1) < 0 || hits_at(out, data, len, j) < 0)) {
            Py_DECREF(out);
            return NULL;
        }
        j += 2;
    }
    return out;
}

/* -- array_spans(): a JSON array stream's elements ------------------------------------------ */

static int
is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\x0b' || c == '\x0c';
}

/* Whether data[from:to] is whitespace around one ',' (count > 0) or whitespace only (count 0). */
static int
separated(const unsigned char *data, Py_ssize_t from, Py_ssize_t to, Py_ssize_t count)
{
    int commas = 0;
    for (Py_ssize_t i = from; i < to; i++) {
        if (data[i] == ',' && count > 0 && !commas) {
            commas = 1;
        } else if (!is_space(data[i])) {
            return 0;
        }
    }
    return commas == (count > 0);
}

static PyObject *
array_spans(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t state[6]; /* pos, in_string, depth, element, after, count */
    if (nargs != 7 || !(PyBytes_CheckExact(args[0]) || PyByteArray_CheckExact(args[0]))) {
        PyErr_SetString(PyExc_TypeError, "array_spans(data: bytes | bytearray, pos, in_string, depth, "
                                         "element, after, count)");
        return NULL;
    }
    for (int k = 0; k < 6; k++) {
        state[k] = PyLong_AsSsize_t(args[k + 1]);
        if (state[k] == -1 && PyErr_Occurred()) {
            return NULL;
        }
    }
    Py_ssize_t pos = state[0], depth = state[2], element = state[3], after = state[4], count = state[5];
    int in_string = state[1] != 0;
    const unsigned char *data;
    Py_ssize_t len;
    if (PyBytes_CheckExact(args[0])) {
        data = (const unsigned char *)PyBytes_AS_STRING(args[0]);
        len = PyBytes_GET_SIZE(args[0]);
    } else {
        data = (const unsigned char *)PyByteArray_AS_STRING(args[0]);
        len = PyByteArray_GET_SIZE(args[0]);
    }
    PyObject *spans = PyList_New(0);
    if (spans == NULL) {
        return NULL;
    }
    Py_ssize_t quote = -1; /* the next '"' at or after pos in a string (len: none), found once */
    while (pos < len) {
        if (in_string) { /* to the closing quote by memchr: a long string is not stepped through */
            if (quote < pos) {
                const unsigned char *q = memchr(data + pos, '"', (size_t)(len - pos));
                quote = q == NULL ? len : q - data;
            }
            const unsigned char *e = memchr(data + pos, '\\', (size_t)(quote - pos));
            if (e != NULL) {
                pos = e - data + 2; /* the escaped byte skipped (perhaps still to come) */
            } else {
                in_string = quote == len;
                pos = quote + (quote < len);
            }
            continue;
        }
        unsigned char c = data[pos];
        if (c == '"') {
            in_string = 1;
        } else if (c == '{' || c == '[') {
            if (depth == 0) {
                if (!separated(data, after, pos, count)) {
                    break;
                }
                element = pos;
            }
            depth++;
        } else if (c == '}' || c == ']') {
            if (depth == 0) {
                break;
            }
            if (--depth == 0) {
                PyObject *start = PyLong_FromSsize_t(element), *end = PyLong_FromSsize_t(pos + 1);
                int failed = start == NULL || end == NULL || PyList_Append(spans, start) < 0 ||
                             PyList_Append(spans, end) < 0;
                Py_XDECREF(start);
                Py_XDECREF(end);
                if (failed) {
                    Py_DECREF(spans);
                    return NULL;
                }
                after = pos + 1;
                count++;
            }
        }
        pos++;
    }
    return Py_BuildValue("(Nninnnn)", spans, pos, in_string, depth, element, after, count);
}

static PyMethodDef methods[] = {
    {"blocks", (PyCFunction)(void (*)(void))blocks, METH_FASTCALL,
     "blocks(chunk, pos, last_id, events) -> (pos, last_id): the whole simple blocks at chunk[pos:]."},
    {"text", (PyCFunction)(void (*)(void))text, METH_FASTCALL,
     "text(data, big=1048576, /) -> str: data.decode('utf-8', 'replace'), faster from `big` bytes on."},
    {"escaped", (PyCFunction)(void (*)(void))escaped, METH_FASTCALL,
     "escaped(window, sep, layout) -> bytes | None: a cassette body window as one JSON string."},
    {"plain", (PyCFunction)(void (*)(void))plain, METH_FASTCALL,
     "plain(parts, stop) -> bool: every byte of parts ASCII and none of stop's (4 at most)."},
    {"holds", (PyCFunction)(void (*)(void))holds, METH_FASTCALL,
     "holds(data, stop) -> bool: whether data holds a byte of stop's (4 at most)."},
    {"seam_stretches", (PyCFunction)(void (*)(void))seam_stretches, METH_FASTCALL,
     "seam_stretches(parts, ends, reach) -> bytes | None: the bytes within reach of the seams, a newline between two."},
    {"plan_match", (PyCFunction)(void (*)(void))plan_match, METH_FASTCALL,
     "plan_match(ops, texts) -> list[str] | None | NotImplemented: each text's captures, all matched."},
    {"unfit", unfit, METH_O, "unfit(text) -> bool: whether text holds a control character (below U+0020) or a surrogate."},
    {"values", values, METH_O, "values(data) -> int: how many of data's bytes are ',', '[' or '{'."},
    {"b64_runs", (PyCFunction)(void (*)(void))b64_runs, METH_FASTCALL,
     "b64_runs(data, least) -> set[bytes]: the distinct mixed-case base64 runs of `least` bytes or more."},
    {"b64_run", (PyCFunction)(void (*)(void))b64_run, METH_FASTCALL,
     "b64_run(data, least) -> bool: whether data (bytes, an ASCII str) holds `least` base64 bytes in a row."},
    {"b64_findall", (PyCFunction)(void (*)(void))b64_findall, METH_FASTCALL,
     "b64_findall(text, least) -> list[str]: the base64 runs of ASCII text with up to two '=' after each."},
    {"b64_decode", b64_decode, METH_O,
     "b64_decode(data) -> bytes | None: base64 / base64url bytes with no '=' decoded; None: another byte."},
    {"data_lines", data_lines, METH_O,
     "data_lines(segment) -> list[bytes | memoryview]: the data of the SSE data lines whose value is not JSON."},
    {"members", members, METH_O,
     "members(text) -> dict[bytes, list[bytes | memoryview]]: the string members' values per name, in text order."},
    {"chunk_map", (PyCFunction)(void (*)(void))chunk_map, METH_FASTCALL,
     "chunk_map(tenths, times, ends, size, nested) -> bytes | None: a recording's chunk map laid out."},
    {"words", (PyCFunction)(void (*)(void))words, METH_FASTCALL,
     "words(data, words) -> list[tuple[int, int]]: where each lower-case word stands, any case."},
    {"init", init, METH_O, "init(ServerSentEvent): the class whose slots blocks() fills."},
    {"slices", (PyCFunction)(void (*)(void))slices, METH_FASTCALL,
     "slices(body, ends) or slices(body, step, size) -> iterator: the chunks body[a:b] between successive ends."},
    {"longest_gap", longest_gap, METH_O,
     "longest_gap(times) -> (gap, index) | None: the first longest gap between successive floats."},
    {"array_spans", (PyCFunction)(void (*)(void))array_spans, METH_FASTCALL,
     "array_spans(data, pos, in_string, depth, element, after, count) -> (spans, *state): elements found."},
    {"ready", ready, METH_O,
     "ready(chunks) -> async iterator: the iterator's chunks, every step ready at once."},
    {"until_line", until_line, METH_O,
     "until_line(chunks) -> bytes | None: the next chunk with a line ending, the ones before it joined in front."},
    {"feeder", (PyCFunction)(void (*)(void))feeder, METH_FASTCALL,
     "feeder(Decoder, normal, pure_feed) -> Decoder.feed with its commonest calls in C."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "ssemock._speedups",
    "Optional C accelerator for ssemock.sse (same results as its pure-Python code).", -1, methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    init_json_escape();
#ifdef AVX2_PASSES
    __builtin_cpu_init();
    has_avx2 = __builtin_cpu_supports("avx2");
#endif
    init_b64_byte();
    init_b64_value();
    init_member_bytes();
    if (PyType_Ready(&SlicesType) < 0 || PyType_Ready(&ReadyType) < 0) {
        return NULL;
    }
    return PyModule_Create(&module);
}
