/* conn.c - a handle's connection: its errors (kept per thread, with
 * the system's reason for a failed write), statements run once, and
 * PRAGMA numbers. Shared by the backend's files (sqlite.h). */
#include "sqlite.h"

#include <stdio.h>
#include <string.h>

#include "vfs.h"

/* The last error of the calling thread: a handle shared by consumers
 * (under the writer mutex) must not hand one thread another's error. */
_Thread_local char dlq_sqlite_err[DLQ_SQLITE_ERR_MAX];
static _Thread_local char sqlite_err_text[256];	/* dlq_sqlite_db_errmsg */

const char *
dlq_sqlite_db_errmsg(sqlite3 *db)
{
	if ((sqlite3_errcode(db) & 0xff) != SQLITE_CORRUPT)
		return sqlite3_errmsg(db);
	snprintf(sqlite_err_text, sizeof(sqlite_err_text), "%.80s (the "
	    "archive file is damaged: retrying will not mend it; see the "
	    "runbook, \"A damaged archive\")", sqlite3_errmsg(db));
	return sqlite_err_text;
}

const char *
dlq_sqlite_text(sqlite3_stmt *st, int col)
{
	const unsigned char *s = sqlite3_column_text(st, col);

	return s != NULL ? (const char *)s : "";
}

/* Keeps what failed and why for dlq_sqlite_errmsg; `sys`, an errno
 * or 0, is the system's reason, said after SQLite's. The first damage
 * met is kept for dlq_sqlite_known_damaged(). */
void
dlq_sqlite_set_err_sys(struct dlq_sqlite *a, const char *what, int sys)
{
	char buf[64];

	if (a->db == NULL)
		snprintf(dlq_sqlite_err, sizeof(dlq_sqlite_err), "%.60s: out of memory",
		    what);
	else if (sys != 0)
		snprintf(dlq_sqlite_err, sizeof(dlq_sqlite_err), "%.60s: %s (%s)", what,
		    dlq_sqlite_db_errmsg(a->db),
		    strerror_r(sys, buf, sizeof(buf)));
	else
		snprintf(dlq_sqlite_err, sizeof(dlq_sqlite_err), "%.60s: %s", what,
		    dlq_sqlite_db_errmsg(a->db));
	if (a->db != NULL && (sqlite3_errcode(a->db) & 0xff) ==
	    SQLITE_CORRUPT && a->damaged[0] == '\0')
		snprintf(a->damaged, sizeof(a->damaged), "%s", dlq_sqlite_err);
}

/* Once a statement met a damaged page, no batch commits into this
 * file and no test write says it is writable again: what would be
 * acked now would be in a file the operator is to move aside (the
 * runbook), and a test write that passes where the next batch fails
 * again would take every dead letter of the DLQ again and again (a
 * quorum DLQ drops them past its delivery limit). A restart on a
 * mended or new file goes on. */
bool
dlq_sqlite_known_damaged(struct dlq_sqlite *a)
{
	if (a->damaged[0] == '\0')
		return false;
	snprintf(dlq_sqlite_err, sizeof(dlq_sqlite_err), "%s", a->damaged);
	return true;
}

/* The same with the errno of a failed write, sync or read ("No space
 * left on device", "File too large"): the archive's VFS's for a write
 * or a sync (SQLite keeps none for a failed COMMIT, and an older one
 * until its next), else SQLite's. */
void
dlq_sqlite_set_err(struct dlq_sqlite *a, const char *what)
{
	int code = a->db != NULL ? sqlite3_errcode(a->db) & 0xff : 0;
	int sys = 0;

	if (code == SQLITE_IOERR || code == SQLITE_FULL) {
		sqlite3_file_control(a->db, "main", DLQ_VFS_FCNTL_IO_ERRNO,
		    &sys);
		if (sys == 0)
			sys = sqlite3_system_errno(a->db);
	}
	dlq_sqlite_set_err_sys(a, what, sys);
}

const char *
dlq_sqlite_errmsg(const struct dlq_sqlite *a)
{
	(void)a;
	return dlq_sqlite_err;
}

sqlite3 *
dlq_sqlite_db(struct dlq_sqlite *a)
{
	return a->db;
}

int
dlq_sqlite_exec(struct dlq_sqlite *a, const char *sql)
{
	if (sqlite3_exec(a->db, sql, NULL, NULL, NULL) != SQLITE_OK) {
		dlq_sqlite_set_err(a, sql);
		return -1;
	}
	return 0;
}

/* (sqlite.h) */
int64_t
dlq_sqlite_number(struct dlq_sqlite *a, const char *sql, int64_t a1,
    int64_t a2)
{
	sqlite3_stmt *st;
	int64_t v = -1;
	int np;

	if (sqlite3_prepare_v2(a->db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	np = sqlite3_bind_parameter_count(st);
	if (np >= 1)
		sqlite3_bind_int64(st, 1, a1);
	if (np >= 2)
		sqlite3_bind_int64(st, 2, a2);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_type(st, 0) == SQLITE_NULL ? 0 :
		    sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* The number a PRAGMA answers (user_version, page_count); -1 on error. */
int64_t
dlq_sqlite_pragma_int(struct dlq_sqlite *a, const char *sql)
{
	sqlite3_stmt *st;
	int64_t n = -1;

	if (sqlite3_prepare_v2(a->db, sql, -1, &st, NULL) != SQLITE_OK) {
		dlq_sqlite_set_err(a, sql);
		return -1;
	}
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

