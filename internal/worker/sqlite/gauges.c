/* gauges.c - the archive's metric families for /metrics, and the
 * readiness probe's write check, in SQLite (gauges.h). */
#include "gauges.h"

#include "cases.h"
#include "metrics.h"
#include "sqlite.h"

struct gauges {
	struct dlq_sqlite	*archive;
	int64_t			 now_ms;
	int64_t			 owner_sla_ms;
	struct dlq_buf		*out;
};

static const int owner_buckets[] = { 60, 300, 900, 3600, 14400, 86400,
	259200 };

/* Rows of (label..., value) as one metric family. */
static void
family(struct gauges *h, const char *name, const char *type,
    const char *help, const char *sql, const char *const *labels, int nl)
{
	sqlite3 *db = dlq_sqlite_db(h->archive);
	sqlite3_stmt *st;
	int i;

	dlq_buf_printf(h->out, "# HELP %s %s\n# TYPE %s %s\n", name, help,
	    name, type);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_int64(st, 1, h->now_ms);
	sqlite3_bind_int64(st, 2, h->owner_sla_ms);
	while (sqlite3_step(st) == SQLITE_ROW) {
		dlq_buf_adds(h->out, name);
		if (nl > 0) {
			dlq_buf_addc(h->out, '{');
			for (i = 0; i < nl; i++) {
				dlq_buf_printf(h->out, "%s%s=\"", i ? "," : "",
				    labels[i]);
				dlq_metrics_label(h->out, (const char *)
				    sqlite3_column_text(st, i) ?
				    (const char *)sqlite3_column_text(st, i) : "");
				dlq_buf_addc(h->out, '"');
			}
			dlq_buf_addc(h->out, '}');
		}
		dlq_buf_printf(h->out, " %.3f\n", sqlite3_column_double(st, nl));
	}
	sqlite3_finalize(st);
}

/* (sqlite.h) Open records older than cases.owner_sla without an owner,
 * counted on the side of the SLA's age that holds fewer: the tallies
 * count every open record, so the newer ones are counted (at most
 * SIDE_MAX) and taken away, and open records with an owner (none, unless
 * an older dlq-worker made them) too; when the newer ones are more than
 * that (a flood within the SLA), the older ones are counted instead.
 * Linear only in an outage with more than SIDE_MAX open records on both
 * sides. */
#define SIDE_MAX	20000
int64_t
dlq_sqlite_unowned_past_sla(struct dlq_sqlite *archive, int64_t now_ms,
    int64_t owner_sla_ms)
{
	int64_t cut = now_ms - owner_sla_ms, newer, open, owned;

	if (owner_sla_ms <= 0)
		return 0;
	newer = dlq_sqlite_number(archive, "SELECT count(*) FROM (SELECT 1"
	    " FROM dead_letters WHERE status = 'open' AND received_at >= ?1"
	    " LIMIT ?2)", cut, SIDE_MAX);
	open = dlq_sqlite_number(archive, "SELECT coalesce(sum(n), 0) FROM"
	    " tallies WHERE status = 'open'", 0, 0);
	owned = dlq_sqlite_number(archive, "SELECT count(*) FROM dead_letters"
	    " INDEXED BY dead_letters_open_owned WHERE status = 'open' AND"
	    " owner IS NOT NULL AND received_at < ?1", cut, 0);
	if (newer < 0 || open < 0 || owned < 0)
		return -1;
	if (newer < SIDE_MAX)
		return open - newer - owned;
	return dlq_sqlite_number(archive, "SELECT count(*) FROM dead_letters"
	    " WHERE status = 'open' AND owner IS NULL AND received_at < ?1",
	    cut, 0);
}

static void
unowned_past_sla(struct gauges *h)
{
	int64_t n = dlq_sqlite_unowned_past_sla(h->archive, h->now_ms,
	    h->owner_sla_ms);

	dlq_buf_adds(h->out, "# HELP dlq_cases_unowned_past_sla Open cases "
	    "without an owner for longer than cases.owner_sla.\n# TYPE "
	    "dlq_cases_unowned_past_sla gauge\n");
	if (n >= 0)
		dlq_buf_printf(h->out, "dlq_cases_unowned_past_sla %.3f\n",
		    (double)n);
}

static void
time_to_owner(struct gauges *h)
{
	sqlite3 *db = dlq_sqlite_db(h->archive);
	uint64_t counts[8] = { 0 }, n = 0, cum = 0;
	double sum = 0, s;
	sqlite3_stmt *st;
	size_t i;

	dlq_buf_adds(h->out, "# HELP dlq_time_to_owner_seconds Time from "
	    "dead-lettering to assignment.\n# TYPE dlq_time_to_owner_seconds "
	    "histogram\n");
	if (sqlite3_prepare_v2(db, "SELECT (assigned_at - received_at) / 1000.0"
	    " FROM dead_letters WHERE assigned_at IS NOT NULL", -1, &st, NULL) ==
	    SQLITE_OK) {
		while (sqlite3_step(st) == SQLITE_ROW) {
			s = sqlite3_column_double(st, 0);
			for (i = 0; i < 7 && s > owner_buckets[i]; i++)
				;
			counts[i]++;
			n++;
			sum += s;
		}
		sqlite3_finalize(st);
	}
	for (i = 0; i < 7; i++) {
		cum += counts[i];
		dlq_buf_printf(h->out, "dlq_time_to_owner_seconds_bucket{le=\"%d\"}"
		    " %llu\n", owner_buckets[i], (unsigned long long)cum);
	}
	dlq_buf_printf(h->out, "dlq_time_to_owner_seconds_bucket{le=\"+Inf\"} "
	    "%llu\ndlq_time_to_owner_seconds_sum %.3f\n"
	    "dlq_time_to_owner_seconds_count %llu\n", (unsigned long long)n, sum,
	    (unsigned long long)n);
}

void
dlq_sqlite_metrics(struct dlq_sqlite *archive, int64_t now_ms,
    int64_t owner_sla_ms, struct dlq_buf *out)
{
	struct gauges g = { archive, now_ms, owner_sla_ms, out }, *h = &g;
	/* every series of one DLQ has it in the label "dlq", as the
	 * consumers' (dlq_consumer_up) do, so that they join */
	static const char *const qs[] = { "dlq", "status" };
	static const char *const q[] = { "dlq" };
	static const char *const o[] = { "outcome" };

	/* from the tallies: the same with ten or a million open records */
	family(h, "dlq_unresolved", "gauge", "Unresolved dead letters by "
	    "DLQ and status.", "SELECT dlq, status, sum(n) FROM tallies WHERE "
	    "status IN ('open', 'assigned', 'replaying') GROUP BY dlq, status "
	    "HAVING sum(n) > 0", qs, 2);
	/* a seek per DLQ and unresolved status the tallies name */
	family(h, "dlq_oldest_unresolved_age_seconds", "gauge", "Age of the "
	    "oldest unresolved dead letter by DLQ.", "SELECT dlq, (?1 - min(("
	    "SELECT min(received_at) FROM dead_letters d WHERE d.dlq = t.dlq "
	    "AND d.status = t.status))) / 1000.0 FROM (SELECT DISTINCT dlq, "
	    "status FROM tallies WHERE status IN ('open', 'assigned', "
	    "'replaying') AND n > 0) t GROUP BY dlq", q, 1);
	family(h, "dlq_replays_total", "counter", "Replay attempts by outcome.",
	    "SELECT outcome, count(*) FROM attempts GROUP BY outcome", o, 1);
	family(h, "dlq_repeated_cycles_total", "counter", "Dead letters of "
	    "messages that had been replayed (a repeated cycle).",
	    "SELECT count(*) FROM dead_letters WHERE replay_of IS NOT NULL",
	    NULL, 0);
	family(h, "dlq_escalations_overdue", "gauge", "Assigned cases past "
	    "their escalate-at time.", "SELECT count(*) FROM dead_letters WHERE "
	    "status = 'assigned' AND escalate_at < ?1", NULL, 0);
	unowned_past_sla(h);
	family(h, "dlq_oldest_awaiting_decision_age_seconds", "gauge", "Age of "
	    "the oldest open or assigned case.", "SELECT coalesce((?1 - "
	    "min(received_at)) / 1000.0, 0) FROM dead_letters WHERE status IN "
	    "('open', 'assigned')", NULL, 0);
	family(h, "dlq_replays_without_evidence_total", "counter", "Replay "
	    "attempts that recorded no evidence.", "SELECT count(*) FROM "
	    "attempts WHERE evidence IS NULL", NULL, 0);
	family(h, "dlq_max_dead_cycles", "gauge", "Most dead cycles of one "
	    "message replayed from the archive (its replay count when it died "
	    "last).", "SELECT "
	    "coalesce(max(replay_count), 0) FROM dead_letters WHERE "
	    "replay_of IS NOT NULL", NULL, 0);
	family(h, "dlq_redrive_attempts_total", "counter", "Automatic redrive "
	    "attempts by outcome.", "SELECT outcome, count(*) FROM attempts "
	    "WHERE actor = '" DLQ_REDRIVE_ACTOR "' GROUP BY outcome", o, 1);
	family(h, "dlq_redrive_left_for_humans", "gauge", "Unresolved cases "
	    "the redrive stopped trying (max_cycles or policy).", "SELECT "
	    "count(*) FROM dead_letters INDEXED BY dead_letters_redrive_stopped "
	    "WHERE redrive_stopped_at IS NOT NULL AND status IN ('open', "
	    "'assigned')", NULL, 0);
	family(h, "dlq_redrive_circuit_open", "gauge", "1 while the redrive "
	    "of a queue's DLQ is paused by its circuit.", "SELECT (SELECT d.dlq "
	    "FROM dead_letters d WHERE d.queue = c.queue LIMIT 1), 1 FROM "
	    "redrive_circuits c WHERE c.resumed_at IS NULL GROUP BY c.queue",
	    q, 1);
	time_to_owner(h);
}

bool
dlq_sqlite_writable(struct dlq_sqlite *archive)
{
	sqlite3 *db = dlq_sqlite_db(archive);
	bool ok;

	dlq_archive_writer_lock();	/* a turn among the writers */
	ok = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK;
	if (ok)
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	dlq_archive_writer_unlock();
	return ok;
}

void
dlq_sqlite_busy_timeout(struct dlq_sqlite *archive, int ms)
{
	sqlite3_busy_timeout(dlq_sqlite_db(archive), ms);
}
