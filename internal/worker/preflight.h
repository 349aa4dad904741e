/* preflight.h - what is unsafe in a configuration that loads: files
 * others can read that hold secrets, a mask list that leaves keys out,
 * TLS that checks nobody, a password sent in clear to another host.
 *
 * One set of checks for the two places that run them: each start of the
 * worker logs them, and `dlq-worker --check-config` prints them, so the
 * check says what the start will (the secrets themselves never appear). */
#ifndef DLQ_PREFLIGHT_H
#define DLQ_PREFLIGHT_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

/* One warning. Strings valid during the call only; `path`, `mode` and
 * `missing` may be NULL. */
struct dlq_warning {
	const char	*event;		/* the log event: config_insecure */
	const char	*path;		/* the file it is about */
	const char	*mode;		/* its mode, "0644" */
	const char	*missing;	/* mask keys left out */
	const char	*host;		/* the host a password goes to */
	const char	*advice;
};

typedef void	dlq_warn_fn(const struct dlq_warning *, void *arg);

/* Runs every check and hands each warning to `warn`; how many. */
int	dlq_preflight(const struct dlq_config *, dlq_warn_fn *warn, void *arg);

/* The worker's `warn`: one log line at warn level, its fields named as
 * in struct dlq_warning. */
void	dlq_preflight_log(const struct dlq_warning *, void *arg);

/* Whether users other than the worker's may open the file at `path`:
 * others have any access, or a group other than the worker's has. Its
 * mode goes into `mode` ("0644"). */
bool	dlq_preflight_open_to_others(const char *path, char *mode, size_t n);

#endif
