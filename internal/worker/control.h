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

#endif
