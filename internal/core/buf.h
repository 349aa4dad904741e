/* buf.h - growable byte buffer and JSON text building.
 *
 * Log lines, digests and control replies are built by appending to one
 * buffer and written with one write(2). The buffer is reused between lines,
 * so the hot path (one dead letter) allocates only when a line is larger
 * than any before it. An allocation failure is sticky: the buffer stops
 * growing, `oom` is set and the caller drops the line. Not thread-safe:
 * one buffer per thread. */
#ifndef DLQ_BUF_H
#define DLQ_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dlq_buf {
	char	*data;		/* always NUL-terminated when len > 0 */
	size_t	 len;
	size_t	 cap;
	bool	 oom;
};

void	dlq_buf_init(struct dlq_buf *);
void	dlq_buf_release(struct dlq_buf *);	/* frees data; init again to reuse */
void	dlq_buf_reset(struct dlq_buf *);	/* len = 0, keeps the memory */
void	dlq_buf_add(struct dlq_buf *, const void *, size_t);
void	dlq_buf_adds(struct dlq_buf *, const char *);
/* Makes room for `extra` more bytes and the NUL; false when out of
 * memory (then `oom` is set). */
bool	dlq_buf_reserve(struct dlq_buf *, size_t extra);

/* One byte: inline, as JSON building appends quotes and brackets one at
 * a time, hundreds per log line. */
static inline void
dlq_buf_addc(struct dlq_buf *b, char c)
{
	if (b->len + 2 > b->cap && !dlq_buf_reserve(b, 1))
		return;
	b->data[b->len++] = c;
	b->data[b->len] = '\0';
}
void	dlq_buf_printf(struct dlq_buf *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
void	dlq_buf_add_i64(struct dlq_buf *, int64_t);
void	dlq_buf_add_u64(struct dlq_buf *, uint64_t);

/* Appends `s` (n bytes) as a quoted JSON string. Control characters are
 * escaped; bytes that are not valid UTF-8 become U+FFFD, so the output is
 * always valid JSON whatever the input. */
void	dlq_buf_json_str(struct dlq_buf *, const void *s, size_t n);
void	dlq_buf_json_cstr(struct dlq_buf *, const char *);	/* NULL -> null */
/* Appends ,"key": (a log line's or an object's next key). */
void	dlq_buf_json_key(struct dlq_buf *, const char *key);

/* Appends a timestamp (seconds or milliseconds since the epoch, UTC) as
 * RFC 3339, e.g. 2026-11-30T10:00:00Z / 2026-11-30T10:00:00.123Z. */
void	dlq_buf_rfc3339(struct dlq_buf *, int64_t secs);
void	dlq_buf_rfc3339_ms(struct dlq_buf *, int64_t ms);

/* Appends base64 of s[0..n) (RFC 4648, padded). */
void	dlq_buf_base64(struct dlq_buf *, const void *s, size_t n);
/* Decodes base64 text into `out` (appended); -1 on bad input. */
int	dlq_base64_decode(const char *text, struct dlq_buf *out);

/* Appends s[0..n) with each NUL byte and each byte that starts no valid
 * UTF-8 sequence as U+FFFD: text that a C string and SQLite's TEXT hold
 * whole (an error header's bytes: an AMQP header is not always UTF-8). */
void	dlq_buf_add_text(struct dlq_buf *, const void *s, size_t n);
/* Length of the prefix of s[0..n) that dlq_buf_add_text copies as it
 * is: n when the text needs no change. */
size_t	dlq_text_len(const void *s, size_t n);
/* Copies s[0..len) into out[n] as dlq_buf_add_text makes it, cut to
 * whole characters: an id shown whole in a digest or a plan, not ended at
 * its NUL (n > 0). */
void	dlq_text_copy(char *out, size_t n, const void *s, size_t len);
/* Appends JSON text that SQLite built from stored bytes made valid: each
 * byte that starts no valid UTF-8 sequence as U+FFFD, and each escaped
 * NUL (\u0000) as \ufffd, so that a C string (cJSON's, dlqctl's) holds
 * each value whole. Its structure is ASCII and unchanged. */
void	dlq_buf_add_json_text(struct dlq_buf *, const void *s, size_t n);
/* Length of the longest prefix of s[0..n) that is valid UTF-8 and does not
 * end inside a multi-byte sequence; used to truncate text cleanly. */
size_t	dlq_utf8_prefix(const void *s, size_t n);
/* True when s[0..n) is valid UTF-8 without NUL or control bytes other than
 * tab, CR and LF: text a human can read in a log line. */
bool	dlq_utf8_is_text(const void *s, size_t n);
/* Length of the prefix of s[0..n) that JSON copies as is: printable ASCII
 * other than '"' and '\\' (scanned 16 or 8 bytes at a time). */
size_t	dlq_json_plain_len(const void *s, size_t n);

#endif
