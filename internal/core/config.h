/* config.h - the worker's configuration: libconfig file + env overrides.
 *
 * Built once in main, before any thread starts, then read-only: threads may
 * read it without locks. Every string is a private copy; the libconfig
 * handle is destroyed before dlq_config_load() returns. Defaults and bounds
 * live in one table in config.c. Errors are reported as "file:line:
 * message" (or "ENV_VAR: message") and all of them are collected before
 * the load fails. */
#ifndef DLQ_CONFIG_H
#define DLQ_CONFIG_H

#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "log.h"
#include "settings.h"

/* The policy for `queue`: its replay.queues entry merged over the global
 * one. Strings and lists are borrowed from `c`. */
void	dlq_config_replay_policy(const struct dlq_config *c, const char *queue,
	    struct dlq_replay_policy *out);

/* Fills `c` from the file at `path` (NULL: embedded defaults only), then
 * from the environment. Returns 0, or -1 with one line per problem appended
 * to `errors`; `c` must be released either way. */
int	dlq_config_load(struct dlq_config *c, const char *path,
	    struct dlq_buf *errors);
void	dlq_config_release(struct dlq_config *);	/* NULL ok */

/* The default log.mask_keys that `c` masks no more: a list in the file
 * replaces the defaults, and a default none of its words is part of
 * ("key" is part of "api_key") prints in clear. Appends them to `out`
 * ("pwd, cookie") and returns how many. */
size_t	dlq_config_mask_keys_left_out(const struct dlq_config *c,
	    struct dlq_buf *out);

/* The i-th setting a file takes ("rabbitmq.url") into buf, and its
 * variable (NULL: none) into *env; NULL past the last. */
const char *dlq_config_setting(size_t i, char *buf, size_t n,
	    const char **env);

void	dlq_broker_release(struct dlq_broker *);

/* fopen() for a configuration or topology file, or NULL with the reason
 * ("PATH: cannot open: ..." or a directory) added to `errors`. */
FILE	*dlq_config_fopen(const char *path, struct dlq_buf *errors);

/* Why libconfig could not read `cf` from `path`, with its line, into
 * `errors` ("PATH:LINE: syntax error (a setting is name = value; ...)"). */
struct config_t;
void	dlq_config_say_unread(const struct config_t *cf, const char *path,
	    struct dlq_buf *errors);

/* Where the worker listens for dlqctl unless control.socket says. */
#define DLQ_CONTROL_SOCKET_DEFAULT	"/run/dlq-monitor/control.sock"

#endif
