/* duration.h - durations as people write them: "90s", "15m", "7d".
 *
 * dlqctl's options, the configuration file and the environment take them
 * (a plain number of milliseconds still works where a setting is in
 * milliseconds); dlqctl and the digests print them. Pure functions. */
#ifndef DLQ_DURATION_H
#define DLQ_DURATION_H

#include <stddef.h>
#include <stdint.h>

/* "90s", "15m", "2h", "7d", "500ms", "1w" -> milliseconds; -1 if bad,
 * DLQ_DURATION_TOO_LONG if more than DLQ_DURATION_MAX_MS (ten years,
 * "3650d": any unit, the total counts). */
#define DLQ_DURATION_MAX_MS	(3650LL * 86400000)
#define DLQ_DURATION_TOO_LONG	(-2)
int64_t	dlq_parse_duration(const char *);

/* A duration exactly, in its largest whole unit: "1500ms", "90s", "2m",
 * "36h", "7d" (dlq_parse_duration reads it back). */
const char *dlq_format_duration(int64_t ms, char *out, size_t n);

/* A compact age: "42s", "5m", "3h", "2d". */
const char *dlq_format_age(int64_t ms, char *out, size_t n);

#endif
