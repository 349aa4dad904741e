/* control.h - the worker's UNIX control socket, as smtpd's for smtpctl.
 *
 * The worker owns the archive; dlqctl reaches it only through here. One
 * JSON request per line, one JSON response per line:
 *   -> {"cmd":"list","queue":"orders","limit":20}
 *   <- {"ok":true,"data":[...]}
 *   <- {"ok":false,"code":"permission","error":"drop needs the operator role"}
 * The caller is identified by SO_PEERCRED and mapped to a role: viewer
 * (list, show without payload, stats, groups, audit), operator (+ payload,
 * assign, drop, reopen, replay), admin (+ purge). root and the worker's
 * own user are admin; others per control.viewers / operators / admins.
 * Every mutating request is written to the audit table, refused or not.
 * One thread with its own archive handle; a bad request never takes the
 * worker down. */
#ifndef DLQ_CONTROL_H
#define DLQ_CONTROL_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "buf.h"
#include "config.h"
#include "proto.h"

struct dlq_control;

/* Binds the socket and starts the thread. NULL on failure (logged). */
struct dlq_control *dlq_control_start(const struct dlq_config *);
void	dlq_control_stop(struct dlq_control *);	/* NULL ok */

/* The role of a peer (pure but for the user/group database). */
enum dlq_role dlq_control_role(const struct dlq_config *, uid_t, gid_t,
	    char *user, size_t userlen);

/* Calls `say` for each name in control.viewers, .operators and .admins
 * that this host's user or group database does not know ("alise" for
 * "alice", "@opps"): such an entry grants nothing, and a typo locks its
 * user out. `key` is the setting, `what` "user" or "group". */
void	dlq_control_unknown_members(const struct dlq_config *,
	    void (*say)(const char *key, const char *what, const char *name,
	    void *arg), void *arg);

/* Handles one request line from a peer with `role` named `user` and
 * appends the response line (with "\n"). Used by the thread and by the
 * request-parser fuzzer. `db` may be NULL (then data commands fail).
 * `peer` is the peer's socket, for the progress lines of a long request
 * that asks for them ("progress":true: a purge), sent before the
 * response; -1: none are sent. */
struct dlq_archive;
void	dlq_control_handle(const struct dlq_config *, struct dlq_archive *,
	    const char *line, size_t len, enum dlq_role role, const char *user,
	    long uid, int peer, struct dlq_buf *out);

#endif
