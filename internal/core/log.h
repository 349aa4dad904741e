/* log.h - one JSON object per line on stdout.
 *
 *   {"ts":"2026-11-30T10:00:00.123Z","level":"warn","event":"ack_failed",...}
 *
 * Every line is built in a buffer and written with one write(2), so lines
 * from different threads never interleave. The event name is stable: tests
 * and operators grep for it. Callable from any thread; errno is preserved.
 * Never pass a secret (password, webhook URL) as a value. */
#ifndef DLQ_LOG_H
#define DLQ_LOG_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"

enum dlq_log_level {
	DLQ_LOG_DEBUG,
	DLQ_LOG_INFO,
	DLQ_LOG_WARN,
	DLQ_LOG_ERR,
};

void	dlq_log_set_level(enum dlq_log_level);
void	dlq_log_set_fd(int);			/* default 1 (stdout) */
bool	dlq_log_enabled(enum dlq_log_level);
int	dlq_log_level_parse(const char *, enum dlq_log_level *); /* 0 / -1 */

/* Simple lines: NULL-terminated key, value pairs of strings (a NULL value
 * prints as null). */
void	dlq_log(enum dlq_log_level, const char *event, ...)
	    __attribute__((sentinel));

/* Lines with typed fields: begin, add fields, end (which writes the line
 * and resets the buffer). The buffer is the caller's, reused across lines;
 * begin appends, so a caller may also collect several finished lines
 * (closed with "}\n") and write them later. Begin returns false, and
 * appends nothing, when `log.level` leaves the line out: the caller then
 * adds no fields and does not end it. */
bool	dlq_log_begin(struct dlq_buf *, enum dlq_log_level, const char *event)
	    __attribute__((warn_unused_result));
void	dlq_log_str(struct dlq_buf *, const char *key, const char *);
void	dlq_log_strn(struct dlq_buf *, const char *key, const void *, size_t);
void	dlq_log_int(struct dlq_buf *, const char *key, int64_t);
void	dlq_log_bool(struct dlq_buf *, const char *key, bool);
void	dlq_log_key(struct dlq_buf *, const char *key);	/* then raw JSON */
void	dlq_log_end(struct dlq_buf *);
/* Writes finished lines ("...\n"...): to a regular file with one write(2)
 * (the kernel keeps it whole); to a pipe or socket with as few as keep
 * each one whole lines and at most PIPE_BUF bytes (atomic on a pipe, so
 * lines of other threads never land inside them), a longer line alone.
 * An unfinished last line is not written. */
void	dlq_log_write_lines(const char *, size_t);

#endif
