/* pg.h - the PostgreSQL backend's own: what its files share and no other
 * module sees (the connection of a handle, running a statement with a
 * deadline, errors, the schema). */
#ifndef DLQ_PG_H
#define DLQ_PG_H

#include <libpq-fe.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "pgdb.h"
#include "record.h"
#include "redact.h"

#define DLQ_PG_SCHEMA		2	/* the schema this program writes */
#define DLQ_PG_ERR_MAX		512
#define DLQ_PG_TARGET_MAX	256
/* A statement's answer is waited for at most archive.busy_timeout_ms,
 * but not less than this: a server that does not answer (stopped,
 * partitioned) fails the batch instead of stalling the worker. */
#define DLQ_PG_MIN_WAIT_MS	1000
/* Migrations and the advisory lock that orders them wait longer: the
 * first worker may be building indexes. */
#define DLQ_PG_MIGRATE_WAIT_MS	(10 * 60 * 1000)
/* A statement or answer this large leaves libpq's buffers as large for
 * the connection's life: it is closed after it (conn.c). */
#define DLQ_PG_LARGE		(1 << 20)

struct dlq_pg {
	PGconn		*conn;		/* NULL: lost, made again when needed */
	char		*conninfo;	/* archive.url (holds the password) */
	char		 target[DLQ_PG_TARGET_MAX];	/* user@host:port/db */
	int		 wait_ms;	/* a statement's deadline */
	bool		 in_tx;		/* began: holds the writer mutex */
	bool		 prepared;	/* the insert, on this connection */
	bool		 lost;		/* said archive_connection_lost */
	bool		 inflated;	/* carried DLQ_PG_LARGE: closed at
					 * the end of its transaction */
	const atomic_bool *stop;	/* dlq_pg_stop_waits() */
	struct dlq_record_enc enc;
	struct dlq_buf	 text;		/* a put's text parameters */
	struct dlq_buf	 raw;		/* a put's properties not text */
	struct dlq_redact mask;		/* error texts read back: the rules
					 * of now (log.mask_*) */
};

/* The last error of the calling thread (dlq_pg_errmsg). */
extern _Thread_local char dlq_pg_err[DLQ_PG_ERR_MAX];

/* Keeps "what: libpq's message" as the thread's error. */
void	dlq_pg_set_err(struct dlq_pg *, const char *what);

/* Connects when the handle has no connection (first use, or lost
 * outside a transaction). 0 / -1 with the error kept. */
int	dlq_pg_connect(struct dlq_pg *);

/* Runs `sql` with n text parameters (binary where formats[i] is 1, of
 * lengths[i] bytes), waiting for the answer at most `wait_ms`; a
 * connection that does not answer by then, or broke, is dropped (made
 * again at the next use outside a transaction). The result (rows or
 * none), or NULL with the error kept; the caller PQclear()s it. */
PGresult *dlq_pg_query(struct dlq_pg *, const char *what, const char *sql,
	    int n, const char *const *values, const int *lengths,
	    const int *formats, int wait_ms);
/* The answer to what was sent on the connection (PQsend*), awaited as
 * dlq_pg_query awaits it. */
PGresult *dlq_pg_answer(struct dlq_pg *, const char *what, int wait_ms);
/* The same for a statement prepared as `name` on this connection. */
PGresult *dlq_pg_query_prepared(struct dlq_pg *, const char *what,
	    const char *name, int n, const char *const *values,
	    const int *lengths, const int *formats);
/* A statement without parameters or rows. 0 / -1 */
int	dlq_pg_exec(struct dlq_pg *, const char *what, const char *sql);
/* The first column of the first row as a number: 1 and *v, 0 when there
 * is no row or it is NULL, -1 on error. Text parameters only. */
int	dlq_pg_number(struct dlq_pg *, const char *what, const char *sql,
	    int n, const char *const *values, int64_t *v);

/* COMMIT of the connection's transaction, checked: one that met an
 * error is rolled back by COMMIT, which still answers OK (its command
 * tag says which it did). 0, or -1 with the error kept. */
int	dlq_pg_commit_tx(struct dlq_pg *);

/* A case query's error (cases.h): the thread's error as the answer's
 * text; DLQ_ERROR. */
int	dlq_pg_fail(struct dlq_buf *out);
/* Runs `sql`, whose one row and column is JSON, with n text parameters,
 * and appends that JSON made compact, as SQLite's json functions write
 * it (PostgreSQL's json text has blanks after colons and commas).
 * DLQ_OK, DLQ_NOT_FOUND (no row, or NULL) or dlq_pg_fail(). */
int	dlq_pg_query_json(struct dlq_pg *, const char *sql, int n,
	    const char *const *values, struct dlq_buf *out);

/* A discarded record that a reopen may take back (of `dead_letters`):
 * its payload kept, and no replay of it that may have arrived: sending
 * it again could send it twice. As the SQLite archive's. */
#define DLQ_PG_REOPENABLE	"(status = 'discarded' AND purged_at IS NULL"	\
	" AND NOT EXISTS (SELECT 1 FROM attempts WHERE dead_letter_id ="	\
	" dead_letters.id AND outcome IN ('unknown', 'published')))"

/* The statuses of a record not resolved yet. */
#define DLQ_PG_UNRESOLVED	"('open','assigned','replaying')"
/* The record ids (j.value) an audited request `r` named, r.ids being
 * its args' "ids": the links audit_ids keeps for it. */
#define DLQ_PG_AUDIT_IDS(r)	"jsonb_array_elements(CASE jsonb_typeof(" \
	r ".ids) WHEN 'array' THEN " r ".ids ELSE '[]' END) j WHERE" \
	" jsonb_typeof(j.value) = 'number'"

/* The failure signature groups (`g`: signature, sid its sample, fid
 * its first record ever, lid its last, n its records, u those
 * unresolved), as SQLite counts them: of all time, or of the records
 * received since the parameter `p`; each group's sample its first record
 * in the window. */
#define DLQ_PG_GROUPS_ALL \
	"(SELECT a.signature, a.sid, a.sid fid, a.lid, a.n," \
	" coalesce(o.n, 0) u FROM" \
	" (SELECT signature, min(id) sid, max(id) lid, count(*) n" \
	"  FROM dead_letters GROUP BY signature) a" \
	" LEFT JOIN (SELECT signature, count(*) n FROM dead_letters" \
	"  WHERE status IN " DLQ_PG_UNRESOLVED " GROUP BY signature) o" \
	" ON o.signature = a.signature) g"
#define DLQ_PG_GROUPS_SINCE(p) \
	"(SELECT signature, min(id) sid, max(id) lid, count(*) n," \
	" sum((status IN " DLQ_PG_UNRESOLVED ")::int) u," \
	" (SELECT min(id) FROM dead_letters x" \
	"  WHERE x.signature = w.signature) fid" \
	" FROM dead_letters w WHERE received_at >= " p \
	" GROUP BY signature) g"

/* Brings the schema up to DLQ_PG_SCHEMA under an advisory lock (the
 * first worker migrates, the others wait), refusing a newer one; 0, or
 * -1 with the error kept (schema.c). *version: what was found. */
int	dlq_pg_migrate(struct dlq_pg *, int *version);
/* The schema version of the database, 0 when it holds no archive yet,
 * -1 on error (schema.c). */
int	dlq_pg_schema_version(struct dlq_pg *);

#endif
