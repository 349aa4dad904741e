/* proto.h - the control protocol between dlq-worker and dlqctl, as
 * smtpd.h's imsg types are for smtpd and smtpctl: its limits, roles,
 * answer codes and exit codes, the statuses of a record, and the
 * reading of request fields. Both sides include this header; dlqctl
 * includes no header of the worker.
 *
 * The worker owns the archive; dlqctl reaches it only through the
 * worker's UNIX socket (worker/control.c). One JSON request per line,
 * one JSON answer per line:
 *   -> {"cmd":"list","queue":"orders","limit":20}
 *   <- {"ok":true,"data":[...]}
 *   <- {"ok":false,"code":"permission","error":"drop needs the operator role"}
 * The caller is identified by SO_PEERCRED and mapped to a role: viewer
 * (list, show without payload, stats, groups, audit), operator (+ payload,
 * assign, drop, reopen, replay), admin (+ purge). */
#ifndef DLQ_PROTO_H
#define DLQ_PROTO_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Exit codes of dlq-worker and dlqctl. */
enum {
	DLQ_EXIT_OK = 0,
	DLQ_EXIT_ERROR = 1,
	DLQ_EXIT_USAGE = 2,
	DLQ_EXIT_CONFLICT = 3,	/* done, not all as asked: topology
				 * conflicts, replay refusals, canary,
				 * records assign / drop may not change */
	DLQ_EXIT_PERMISSION = 4,
};

/* The result of a request, everywhere: the archive's operations return
 * it, the worker answers it as "code" (dlq_result_name) and dlqctl
 * exits with its code (dlq_result_exit). */
enum dlq_result {
	DLQ_OK,
	DLQ_USAGE,		/* the request is wrong: "usage" */
	DLQ_NOT_FOUND,		/* "not_found" */
	DLQ_REFUSED,		/* not every record could be changed, or
				 * the replay policy said no: "refused" */
	DLQ_ERROR,		/* the archive failed: "error" */
	DLQ_PERMISSION,		/* the caller's role is too low */
};

const char *dlq_result_name(enum dlq_result);
/* DLQ_ERROR for a name it does not know. */
enum dlq_result dlq_result_parse(const char *name);
int	dlq_result_exit(enum dlq_result);

#define DLQ_CONTROL_REQUEST_MAX	(64 * 1024)
/* Records a list answers without a "limit", and at most. */
#define DLQ_CONTROL_LIST_DEFAULT	50
#define DLQ_CONTROL_LIST_MAX		10000
/* Archive ids a request names at most (assign, drop, reopen, replay by
 * ids). */
#define DLQ_CONTROL_IDS_MAX		1000
/* Bytes of a free text a request carries at most: an owner, a decision,
 * a reason, evidence. */
#define DLQ_CONTROL_TEXT_MAX		4096
/* Records a replay claim hands out at most, and the bytes of their
 * (base64) bodies; the first is handed out whatever its size, so a
 * claim always makes progress. */
#define DLQ_REPLAY_CLAIM_MAX	500
#define DLQ_REPLAY_CLAIM_BYTES	(8 * 1024 * 1024)

enum dlq_role { DLQ_ROLE_NONE, DLQ_ROLE_VIEWER, DLQ_ROLE_OPERATOR,
	DLQ_ROLE_ADMIN };

/* "none", "viewer", "operator", "admin" */
const char *dlq_role_name(enum dlq_role);
/* The role named `s` (viewer, operator, admin); DLQ_ROLE_NONE when none. */
enum dlq_role dlq_role_parse(const char *s);

/* A record's statuses, as list --status takes them (the list NULL-ended). */
#define DLQ_STATUS_LIST	"open, assigned, replaying, replayed, discarded"
extern const char *const dlq_status_names[];

/* True for a status of DLQ_STATUS_LIST. */
bool	dlq_status_valid(const char *);

/* Why an id a request names is passed over, in that id's result (its
 * exit code in dlqctl is 1, for every command). */
#define DLQ_NOT_IN_ARCHIVE	"not in the archive"

/* Integers in requests: whole numbers of up to 15 digits, which cJSON
 * prints exactly (it prints a double with 15 significant digits when
 * that reads back within its tolerance: 2^53 went out as
 * 9007199254740990, another archive id). */
#define DLQ_JSON_INT_MAX	999999999999999LL

/* Reads a whole number in [min, max] from a JSON value; false otherwise
 * (never converts an out-of-range double). */
bool	dlq_json_int(const cJSON *, int64_t min, int64_t max, int64_t *out);
/* False, saying why in `why`, when the request's free text `key` is
 * longer than DLQ_CONTROL_TEXT_MAX; true when it fits or is absent. */
bool	dlq_json_text_fits(const cJSON *req, const char *key, char *why,
	    size_t n);

/* The text of a JSON string that says something; NULL when it is not a
 * string or holds only white space (a reason of " " is none). */
const char *dlq_json_text(const cJSON *);

#endif
