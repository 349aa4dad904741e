/* ctlclient.h - dlqctl's side of the control socket: one request line
 * out, one response line back. */
#ifndef DLQ_CTLCLIENT_H
#define DLQ_CTLCLIENT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "duration.h"

/* How long a call waits for the worker at most (connecting, sending,
 * the answer), unless set: a worker that is stuck or busy must not hang
 * an operator's command line. */
#define DLQ_CTL_TIMEOUT_MS	(2 * 60 * 1000)

/* Sets that time, in ms; 0: no limit. Before the first call. */
void	dlq_ctl_set_timeout(int64_t ms);

/* Sends `request` (a JSON object, no newline) and parses the answer.
 * NULL on a transport failure or when no answer came in time, with the
 * reason in `why`. */
cJSON	*dlq_ctl_call(const char *socket_path, const cJSON *request,
	    char *why, size_t whylen);

/* The same for a request that asks for progress lines ("progress":true:
 * a purge): `progress` gets each one's "progress" object before the
 * answer comes, then NULL once the call is over (when it got one: a
 * progress line on a terminal is cleared then), and the time the call
 * waits counts again from each line, so that a long request that keeps
 * saying how far it is never times out while one that goes silent
 * does. */
cJSON	*dlq_ctl_call_progress(const char *socket_path, const cJSON *request,
	    void (*progress)(const cJSON *, void *), void *arg, char *why,
	    size_t whylen);

/* What a command returns when it only counted what it would change and
 * said "run again with --yes": dlqctl exits 2 (DLQ_EXIT_USAGE) without
 * the usage line a mistyped command gets. */
#define DLQ_CTL_NEEDS_YES	(-2)

/* A new request: {"cmd": cmd}. */
cJSON	*dlq_ctl_request(const char *cmd);

/* The exit code (DLQ_EXIT_*) an answer that is not ok calls for: its
 * "code" permission 4, usage 2, refused (a record assign or drop may
 * not change) 3, else 1. */
int	dlq_ctl_exit_code(const cJSON *answer);

/* The same, with the answer's error said on stderr ("dlqctl: ..."), and
 * with `json` also on stdout as {"ok":false,"code":C,"error":E}, so
 * that a script reads every answer from stdout. */
int	dlq_ctl_refusal(const cJSON *answer, bool json);

/* {"ok":false,"code":CODE,"error":WHY} on stdout: with --json, an
 * answer that did not come ("unreachable": no worker, a timeout). */
void	dlq_ctl_error_json(const char *code, const char *why);

/* With --json, a question dlqctl asks before it changes anything (how
 * many a selection would drop, without --yes) on stdout:
 * {"ok":false,"code":"needs_yes","command":CMD,"would_change":N}. */
void	dlq_ctl_needs_yes_json(const char *cmd, double n);

#endif
