/* console.h - the web console and its HTTP API, behind the worker's HTTP
 * listener (http.c hands over every request under /ops/, /api/, /login,
 * /logout and /static/).
 *
 * Every request is authenticated before anything else is looked at: a
 * bearer token, a session cookie (made by the login form), or a user
 * named by a trusted proxy's header (only from console.trusted_proxies).
 * A change made through a session or a proxy also carries the session's
 * CSRF token. Then the API builds the same request the control socket
 * takes and runs it through dlq_requests_handle(): one command table,
 * one set of roles, limits, claims and audit for dlqctl and the console
 * (the audit names console users "console:NAME"). See docs/console.md. */
#ifndef DLQ_CONSOLE_H
#define DLQ_CONSOLE_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "httpmsg.h"

struct dlq_archive;
struct dlq_console;

/* NULL with `why` when console.tokens_file does not read; a console
 * without users when it is not set (it answers 401 to everyone). */
struct dlq_console *dlq_console_new(const struct dlq_config *,
	    struct dlq_archive *, char *why, size_t n);
void	dlq_console_free(struct dlq_console *);
/* Whether the console answers `url`. */
bool	dlq_console_serves(const char *url);
void	dlq_console_handle(struct dlq_console *, const struct dlq_console_req *,
	    struct dlq_console_res *);

#endif
