/* gauges.c - the archive's metric families for /metrics, in
 * PostgreSQL (gauges.h): the same families as the SQLite archive's, and
 * archive-wide: every replica reads the same database, so a dashboard
 * takes them from one replica (max by family), not their sum. */
#include "gauges.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "metrics.h"
#include "pg.h"

struct gauges {
	struct dlq_pg		*archive;
	int64_t			 now_ms;
	int64_t			 owner_sla_ms;
	struct dlq_buf		*out;
	bool			 failed;	/* a query failed: the server
						 * is not asked again in this
						 * scrape */
};

static const int owner_buckets[] = { 60, 300, 900, 3600, 14400, 86400,
	259200 };

/* Rows of (label..., value) as one metric family. */
static void
family(struct gauges *h, const char *name, const char *type,
    const char *help, const char *sql, const char *const *labels, int nl)
{
	char now[24], sla[24];
	const char *values[2] = { now, sla };
	PGresult *res;
	int i, r, n = 0;

	dlq_buf_printf(h->out, "# HELP %s %s\n# TYPE %s %s\n", name, help,
	    name, type);
	/* a statement takes as many parameters as it names */
	if (strstr(sql, "$2") != NULL)
		n = 2;
	else if (strstr(sql, "$1") != NULL)
		n = 1;
	snprintf(now, sizeof(now), "%lld", (long long)h->now_ms);
	snprintf(sla, sizeof(sla), "%lld", (long long)h->owner_sla_ms);
	if (h->failed)
		return;
	res = dlq_pg_query(h->archive, "metrics", sql, n, values, NULL, NULL,
	    h->archive->wait_ms);
	if (res == NULL) {
		h->failed = true;
		return;
	}
	for (r = 0; r < PQntuples(res); r++) {
		dlq_buf_adds(h->out, name);
		if (nl > 0) {
			dlq_buf_addc(h->out, '{');
			for (i = 0; i < nl; i++) {
				dlq_buf_printf(h->out, "%s%s=\"", i ? "," : "",
				    labels[i]);
				dlq_metrics_label(h->out, PQgetvalue(res, r, i));
				dlq_buf_addc(h->out, '"');
			}
			dlq_buf_addc(h->out, '}');
		}
		dlq_buf_printf(h->out, " %.3f\n", PQgetisnull(res, r, nl) ? 0.0 :
		    strtod(PQgetvalue(res, r, nl), NULL));
	}
	PQclear(res);
}

/* Counted by the server: the rows do not travel. */
static void
time_to_owner(struct gauges *h)
{
	uint64_t counts[8] = { 0 }, n = 0, cum = 0;
	double sum = 0;
	PGresult *res;
	size_t i;
	int r;

	dlq_buf_adds(h->out, "# HELP dlq_time_to_owner_seconds Time from "
	    "dead-lettering to assignment.\n# TYPE dlq_time_to_owner_seconds "
	    "histogram\n");
	res = h->failed ? NULL : dlq_pg_query(h->archive, "metrics",
	    "SELECT width_bucket("
	    "(assigned_at - received_at) / 1000.0, ARRAY[60.000001, 300.000001,"
	    " 900.000001, 3600.000001, 14400.000001, 86400.000001,"
	    " 259200.000001]), count(*), sum((assigned_at - received_at) /"
	    " 1000.0) FROM dead_letters WHERE assigned_at IS NOT NULL GROUP BY"
	    " 1", 0, NULL, NULL, NULL, h->archive->wait_ms);
	for (r = 0; res != NULL && r < PQntuples(res); r++) {
		i = (size_t)strtoul(PQgetvalue(res, r, 0), NULL, 10);
		if (i > 7)
			i = 7;
		counts[i] += strtoull(PQgetvalue(res, r, 1), NULL, 10);
		n += strtoull(PQgetvalue(res, r, 1), NULL, 10);
		sum += strtod(PQgetvalue(res, r, 2), NULL);
	}
	PQclear(res);
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
dlq_pg_metrics(struct dlq_pg *archive, int64_t now_ms,
    int64_t owner_sla_ms, struct dlq_buf *out)
{
	struct gauges g = { archive, now_ms, owner_sla_ms, out, false }, *h = &g;
	/* every series of one DLQ has it in the label "dlq", as the
	 * consumers' (dlq_consumer_up) do, so that they join */
	static const char *const qs[] = { "dlq", "status" };
	static const char *const q[] = { "dlq" };
	static const char *const o[] = { "outcome" };

	family(h, "dlq_unresolved", "gauge", "Unresolved dead letters by "
	    "DLQ and status.", "SELECT dlq, status, count(*) FROM "
	    "dead_letters WHERE status IN ('open', 'assigned', 'replaying') "
	    "GROUP BY dlq, status", qs, 2);
	family(h, "dlq_oldest_unresolved_age_seconds", "gauge", "Age of the "
	    "oldest unresolved dead letter by DLQ.", "SELECT dlq, "
	    "($1::bigint - min(received_at)) / 1000.0 FROM dead_letters WHERE status IN "
	    "('open', 'assigned', 'replaying') GROUP BY dlq", q, 1);
	family(h, "dlq_replays_total", "counter", "Replay attempts by outcome.",
	    "SELECT outcome, count(*) FROM attempts GROUP BY outcome", o, 1);
	family(h, "dlq_repeated_cycles_total", "counter", "Dead letters of "
	    "messages that had been replayed (a repeated cycle).",
	    "SELECT count(*) FROM dead_letters WHERE replay_of IS NOT NULL",
	    NULL, 0);
	family(h, "dlq_escalations_overdue", "gauge", "Assigned cases past "
	    "their escalate-at time.", "SELECT count(*) FROM dead_letters WHERE "
	    "status = 'assigned' AND escalate_at < $1::bigint", NULL, 0);
	family(h, "dlq_cases_unowned_past_sla", "gauge", "Open cases without "
	    "an owner for longer than cases.owner_sla.", "SELECT count(*) FROM "
	    "dead_letters WHERE $2::bigint > 0 AND status = 'open' AND owner IS NULL "
	    "AND received_at < $1::bigint - $2::bigint", NULL, 0);
	family(h, "dlq_oldest_awaiting_decision_age_seconds", "gauge", "Age of "
	    "the oldest open or assigned case.", "SELECT coalesce(($1::bigint - "
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
	    "count(*) FROM dead_letters WHERE redrive_stopped_at IS NOT NULL "
	    "AND status IN ('open', 'assigned')", NULL, 0);
	family(h, "dlq_redrive_circuit_open", "gauge", "1 while the redrive "
	    "of a queue's DLQ is paused by its circuit.", "SELECT (SELECT d.dlq "
	    "FROM dead_letters d WHERE d.queue = c.queue LIMIT 1), 1 FROM "
	    "redrive_circuits c WHERE c.resumed_at IS NULL GROUP BY c.queue",
	    q, 1);
	time_to_owner(h);
}
