/* redrivedb.c - the automatic redrive's queries, in SQLite
 * (redrivedb.h). */
#include "redrivedb.h"

#include "cases.h"
#include "sqlite.h"

bool
dlq_sqlite_redrive_circuit_open(struct dlq_sqlite *archive, const char *queue)
{
	sqlite3_stmt *st;
	bool open = true;	/* unknown: do not redrive */

	if (sqlite3_prepare_v2(dlq_sqlite_db(archive), "SELECT count(*) FROM"
	    " redrive_circuits WHERE queue = ?1 AND resumed_at IS NULL", -1,
	    &st, NULL) != SQLITE_OK)
		return true;
	sqlite3_bind_text(st, 1, queue, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		open = sqlite3_column_int64(st, 0) > 0;
	sqlite3_finalize(st);
	return open;
}

int64_t
dlq_sqlite_redrive_returned(struct dlq_sqlite *archive, const char *queue,
    int64_t since_ms, int64_t until_ms)
{
	sqlite3_stmt *st;
	int64_t n = 0;

	if (sqlite3_prepare_v2(dlq_sqlite_db(archive), "SELECT count(DISTINCT"
	    " a.dead_letter_id) FROM attempts a JOIN dead_letters o ON o.id ="
	    " a.dead_letter_id JOIN dead_letters d ON d.replay_of ="
	    " a.dead_letter_id WHERE a.actor = '" DLQ_REDRIVE_ACTOR "' AND"
	    " a.outcome = 'published' AND o.queue = ?1 AND a.started_at >= ?2"
	    " AND d.received_at >= a.started_at AND d.received_at <= ?3", -1,
	    &st, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(st, 1, queue, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, since_ms);
	sqlite3_bind_int64(st, 3, until_ms);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

void
dlq_sqlite_redrive_trip(struct dlq_sqlite *archive, const char *queue,
    int64_t now_ms, int64_t redriven, int64_t returned)
{
	sqlite3_stmt *st;

	if (sqlite3_prepare_v2(dlq_sqlite_db(archive), "INSERT INTO"
	    " redrive_circuits (queue, tripped_at, redriven, returned) VALUES"
	    " (?1, ?2, ?3, ?4)", -1, &st, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_text(st, 1, queue, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, now_ms);
	sqlite3_bind_int64(st, 3, redriven);
	sqlite3_bind_int64(st, 4, returned);
	dlq_archive_writer_lock();
	sqlite3_step(st);
	dlq_archive_writer_unlock();
	sqlite3_finalize(st);
}

/* `st` is an UPDATE ... RETURNING id, message_id, note; finalized here. */
static void
leave(sqlite3_stmt *st, dlq_redrive_left_fn each, void *arg)
{
	dlq_archive_writer_lock();
	while (sqlite3_step(st) == SQLITE_ROW)
		each(arg, sqlite3_column_int64(st, 0),
		    (const char *)sqlite3_column_text(st, 1),
		    dlq_sqlite_text(st, 2));
	sqlite3_finalize(st);
	dlq_archive_writer_unlock();
}

void
dlq_sqlite_redrive_give_up(struct dlq_sqlite *archive, const char *queue,
    int64_t now_ms, int64_t max_cycles, const char *classes_json,
    dlq_redrive_left_fn each, void *arg)
{
	sqlite3_stmt *st;

	if (sqlite3_prepare_v2(dlq_sqlite_db(archive), "UPDATE dead_letters SET"
	    " redrive_stopped_at = ?1, redrive_note = 'redrive gave up after '"
	    " || replay_count || ' dead cycles (redrive.max_cycles ' || ?3 || ')'"
	    " WHERE queue = ?2 AND status = 'open' AND replay_count >= ?3 AND"
	    " redrive_stopped_at IS NULL AND class IN (SELECT value FROM"
	    " json_each(?4)) RETURNING id, message_id, redrive_note", -1, &st,
	    NULL) != SQLITE_OK)
		return;
	sqlite3_bind_int64(st, 1, now_ms);
	sqlite3_bind_text(st, 2, queue, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, max_cycles);
	sqlite3_bind_text(st, 4, classes_json, -1, SQLITE_STATIC);
	leave(st, each, arg);
}

void
dlq_sqlite_redrive_leave(struct dlq_sqlite *archive, int64_t id, int64_t now_ms,
    const char *note, dlq_redrive_left_fn each, void *arg)
{
	sqlite3_stmt *st;

	if (sqlite3_prepare_v2(dlq_sqlite_db(archive), "UPDATE dead_letters SET"
	    " redrive_stopped_at = ?1, redrive_note = ?2 WHERE id = ?3"
	    " RETURNING id, message_id, redrive_note", -1, &st, NULL) !=
	    SQLITE_OK)
		return;
	sqlite3_bind_int64(st, 1, now_ms);
	sqlite3_bind_text(st, 2, note, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, id);
	leave(st, each, arg);
}

int
dlq_sqlite_redrive_candidates(struct dlq_sqlite *archive, const char *queue,
    int64_t born_before_ms, int64_t max_cycles, const char *classes_json,
    int64_t limit, void (*each)(void *arg, int64_t id), void *arg)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(dlq_sqlite_db(archive), "SELECT id FROM"
	    " dead_letters WHERE queue = ?1 AND status = 'open' AND"
	    " received_at <= ?2 AND replay_count < ?3 AND redrive_stopped_at IS"
	    " NULL AND purged_at IS NULL AND class IN (SELECT value FROM"
	    " json_each(?4)) ORDER BY id LIMIT ?5", -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, queue, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, born_before_ms);
	sqlite3_bind_int64(st, 3, max_cycles);
	sqlite3_bind_text(st, 4, classes_json, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, limit);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		each(arg, sqlite3_column_int64(st, 0));
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : -1;
}
