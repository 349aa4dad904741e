/* ctlview.c - tables and records for a terminal. */
#include "ctlview.h"

#include <string.h>
#include <time.h>

#include "ctlclient.h"
#include "deadletter.h"
#include "jsonexact.h"
#include "signature.h"
#include "termtext.h"

static const char *
s(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : "-";
}

static int64_t
n(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : -1;
}

static const char *
age(const cJSON *o, const char *k, int64_t now, char *buf, size_t len)
{
	int64_t t = n(o, k);

	if (t < 0)
		return "-";
	dlq_format_age(now - t, buf, len);
	strncat(buf, " ago", len - strlen(buf) - 1);
	return buf;
}

/* For show: how long ago, and when (RFC 3339, UTC, milliseconds):
 * "3h ago (2026-12-07T01:02:03.456Z)"; `len` at least WHEN_LEN. */
#define WHEN_LEN	64
static const char *
when(const cJSON *o, const char *k, int64_t now, char *buf, size_t len)
{
	int64_t t = n(o, k);
	time_t sec;
	struct tm tm;
	size_t used;

	if (t < 0)
		return "-";
	age(o, k, now, buf, len);
	sec = (time_t)(t / 1000);
	used = strlen(buf);
	if (gmtime_r(&sec, &tm) != NULL && used + 4 < len) {
		used += strftime(buf + used, len - used, " (%Y-%m-%dT%H:%M:%S",
		    &tm);
		snprintf(buf + used, len - used, ".%03dZ)", (int)(t % 1000));
	}
	return buf;
}

static const char *
age_until(int64_t t, int64_t now, char *buf, size_t len)
{
	return dlq_format_age(t - now, buf, len);
}

/* Untrusted text, escaped, whole. */
static void
put(FILE *f, const char *str)
{
	dlq_term_put(f, str, -1, 0);
}

/* One cell of a table: `str` escaped, cut to `w` columns and padded to
 * them, then a space. */
static void
cell(FILE *f, const char *str, int w)
{
	dlq_term_put(f, str, w, w);
	fputc(' ', f);
}

/* The error text of a record or group; a note when it had none, as in the
 * digest. */
static const char *
error_text(const cJSON *r)
{
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(r, "error");

	return cJSON_IsString(e) && e->valuestring[0] ? e->valuestring :
	    DLQ_NO_ERROR_TEXT;
}

/* The width of the column of `key` in `rows`: its widest value, at least
 * the heading's, at most `cap`. */
static int
col_width(const cJSON *rows, const char *key, const char *head, int cap)
{
	const cJSON *r;
	int w = (int)strlen(head), v;

	cJSON_ArrayForEach(r, rows)
		if ((v = dlq_term_width(s(r, key))) > w)
			w = v;
	return w < cap ? w : cap;
}

/* Whether a row of `rows` has an owner: then list shows the column. */
static bool
any_owner(const cJSON *rows)
{
	const cJSON *r;

	cJSON_ArrayForEach(r, rows)
		if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(r, "owner")))
			return true;
	return false;
}

void
dlq_view_list(FILE *f, const cJSON *data, int64_t now)
{
	const cJSON *r;
	char a[32];
	int wq = col_width(data, "queue", "QUEUE", 40);
	int wc = col_width(data, "class", "CLASS", 16);
	int wm = col_width(data, "message_id", "MESSAGE_ID", 40);
	int wo = any_owner(data) ? col_width(data, "owner", "OWNER", 24) : 0;

	if (cJSON_GetArraySize(data) == 0) {
		fputs("no dead letters match\n", f);
		return;
	}
	fprintf(f, "%-8s %-9s ", "ID", "AGE");
	cell(f, "QUEUE", wq);
	cell(f, "CLASS", wc);
	fprintf(f, "%-9s ", "STATUS");
	if (wo > 0)
		cell(f, "OWNER", wo);
	cell(f, "MESSAGE_ID", wm);
	fputs("ERROR\n", f);
	cJSON_ArrayForEach(r, data) {
		fprintf(f, "%-8lld %-9s ", (long long)n(r, "id"), age(r,
		    "received_at", now, a, sizeof(a)));
		cell(f, s(r, "queue"), wq);
		cell(f, s(r, "class"), wc);
		cell(f, s(r, "status"), 9);
		if (wo > 0)
			cell(f, s(r, "owner"), wo);
		cell(f, s(r, "message_id"), wm);
		dlq_term_put(f, error_text(r), 60, 0);
		fputc('\n', f);
	}
}

static void
field(FILE *f, const char *label, const char *value)
{
	fprintf(f, "%-16s ", label);
	put(f, value);
	fputc('\n', f);
}

/* A JSON value on one line: a string as it is, anything else as JSON. */
static void
put_value(FILE *f, const cJSON *v)
{
	char *text;

	if (cJSON_IsString(v) || dlq_json_literal(v) != NULL) {
		put(f, v->valuestring);
		return;
	}
	text = dlq_json_print(v);
	put(f, text != NULL ? text : "-");
	cJSON_free(text);
}

/* What the message itself carried: properties, where it was published,
 * its counters and its payload's size and digest. */
static void
show_message(FILE *f, const cJSON *d, int64_t now)
{
	static const char *const props[] = { "message_id", "correlation_id",
	    "type", "content_type", "content_encoding", "app_id", "user_id",
	    "reply_to", "expiration", NULL };
	const char *const *p;
	const cJSON *e, *rks;
	const char *unit;
	char a[48], num[128];
	int64_t ms;
	time_t ts;
	struct tm tm;
	int k = 0;

	for (p = props; *p != NULL; p++)
		if (strcmp(s(d, *p), "-") != 0)
			field(f, *p, s(d, *p));
	if (n(d, "timestamp") >= 0) {
		ms = dlq_timestamp_ms((uint64_t)n(d, "timestamp"), &unit);
		ts = (time_t)(ms / 1000);
		if (gmtime_r(&ts, &tm) != NULL && strftime(a, sizeof(a),
		    "%Y-%m-%dT%H:%M:%S", &tm) > 0) {
			if (strcmp(unit, "seconds") == 0)
				snprintf(num, sizeof(num), "%sZ", a);
			else	/* as its client wrote it: say so */
				snprintf(num, sizeof(num), "%s.%03dZ (written "
				    "in %s, not seconds)", a, (int)(ms % 1000),
				    unit);
			field(f, "timestamp", num);
		}
	}
	if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(d, "exchange"))) {
		fprintf(f, "%-16s ", "published to");
		put(f, s(d, "exchange")[0] ? s(d, "exchange") :
		    "(default exchange)");
		rks = cJSON_GetObjectItemCaseSensitive(d, "routing_keys");
		cJSON_ArrayForEach(e, rks) {
			fputs(k++ ? ", " : cJSON_GetArraySize(rks) > 1 ?
			    " with routing keys " : " with routing key ", f);
			put_value(f, e);
		}
		fputc('\n', f);
	}
	if (n(d, "delivery_mode") >= 0)
		field(f, "delivery mode", n(d, "delivery_mode") == 2 ?
		    "persistent" : "transient");
	if (n(d, "priority") >= 0) {
		snprintf(num, sizeof(num), "%lld", (long long)n(d, "priority"));
		field(f, "priority", num);
	}
	if (n(d, "retry_count") >= 0) {
		snprintf(num, sizeof(num), "%lld", (long long)n(d, "retry_count"));
		field(f, "x-retry-count", num);
	}
	if (n(d, "delivery_count") >= 0) {
		snprintf(num, sizeof(num), "%lld", (long long)n(d,
		    "delivery_count"));
		field(f, "x-delivery-count", num);
	}
	if (n(d, "replay_count") > 0) {
		snprintf(num, sizeof(num), "%lld", (long long)n(d, "replay_count"));
		field(f, "x-replay-count", num);
	}
	if (n(d, "replay_of") > 0) {
		snprintf(num, sizeof(num), "#%lld", (long long)n(d, "replay_of"));
		field(f, "replay of", num);
	}
	snprintf(num, sizeof(num), "%lld bytes%s%s", (long long)n(d,
	    "payload_bytes"), strcmp(s(d, "payload_sha256"), "-") ?
	    ", sha256 " : "", strcmp(s(d, "payload_sha256"), "-") ?
	    s(d, "payload_sha256") : "");
	field(f, "payload", num);
	if (n(d, "purged_at") > 0)
		field(f, "purged", when(d, "purged_at", now, a, sizeof(a)));
}

/* The case: owner and decision, evidence, redrive, resolution. */
static void
show_case(FILE *f, const cJSON *d, int64_t now)
{
	char a[WHEN_LEN];

	if (strcmp(s(d, "owner"), "-") != 0) {
		field(f, "owner", s(d, "owner"));
		field(f, "decision", s(d, "decision"));
		field(f, "assigned by", s(d, "assigned_by"));
		if (n(d, "assigned_at") > 0)
			field(f, "assigned", when(d, "assigned_at", now, a,
			    sizeof(a)));
		if (n(d, "escalate_at") > 0)
			field(f, "escalate in", n(d, "escalate_at") > now ?
			    age_until(n(d, "escalate_at"), now, a, sizeof(a)) :
			    "overdue");
	}
	if (strcmp(s(d, "evidence"), "-") != 0) {
		field(f, "evidence", s(d, "evidence"));
		field(f, "checked", when(d, "evidence_at", now, a, sizeof(a)));
	}
	if (strcmp(s(d, "redrive_note"), "-") != 0)
		field(f, "redrive", s(d, "redrive_note"));
	if (strcmp(s(d, "resolution"), "-") != 0) {
		field(f, "resolution", s(d, "resolution"));
		field(f, "resolved by", s(d, "resolved_by"));
		if (n(d, "resolved_at") > 0)
			field(f, "resolved", when(d, "resolved_at", now, a,
			    sizeof(a)));
	}
}

void
dlq_view_show(FILE *f, const cJSON *d, int64_t now)
{
	const cJSON *x, *e;
	char a[WHEN_LEN], num[32];
	int i = 0;

	snprintf(num, sizeof(num), "%lld", (long long)n(d, "id"));
	field(f, "id", num);
	field(f, "status", s(d, "status"));
	field(f, "received", when(d, "received_at", now, a, sizeof(a)));
	field(f, "dlq", s(d, "dlq"));
	field(f, "queue", s(d, "queue"));
	field(f, "class", s(d, "class"));
	field(f, "signature", s(d, "signature"));
	field(f, "error", error_text(d));
	field(f, "how to fix", s(d, "hint"));
	show_message(f, d, now);
	show_case(f, d, now);
	x = cJSON_GetObjectItemCaseSensitive(d, "x_death");
	if (cJSON_GetArraySize(x) > 0)
		fputs("x-death (newest first):\n", f);
	cJSON_ArrayForEach(e, x) {
		fprintf(f, "  %d. ", ++i);
		put(f, s(e, "time"));
		fputs("  ", f);
		put(f, s(e, "reason"));
		fputs(" from ", f);
		put(f, s(e, "queue"));
		fputs(s(e, "exchange")[0] ? " (exchange " : " (default exchange",
		    f);
		put(f, s(e, "exchange"));
		fprintf(f, "), count %lld\n", (long long)n(e, "count"));
	}
	x = cJSON_GetObjectItemCaseSensitive(d, "lineage");
	if (cJSON_GetArraySize(x) > 1) {
		fputs("lineage (each death of this message):\n", f);
		i = 0;
		cJSON_ArrayForEach(e, x) {
			/* the reason is the broker's word in a producer's
			 * x-death header: escaped like any text of a message */
			fprintf(f, "  cycle %d: #%lld ", ++i, (long long)n(e,
			    "id"));
			put(f, s(e, "reason"));
			fputs(", ", f);
			put(f, s(e, "status"));
			fputs(n(e, "id") == n(d, "id") ? "  <- this one\n" : "\n",
			    f);
		}
	}
	x = cJSON_GetObjectItemCaseSensitive(d, "attempts");
	if (cJSON_GetArraySize(x) > 0)
		fputs("attempts:\n", f);
	cJSON_ArrayForEach(e, x) {
		fprintf(f, "  %s by ", when(e, "started_at", now, a, sizeof(a)));
		put(f, s(e, "actor"));
		fputs(": ", f);
		put(f, s(e, "outcome"));
		fputs(" (", f);
		put(f, s(e, "detail"));
		fputs(")\n    to ", f);
		put(f, s(e, "target"));
		fputs("; reason: ", f);
		put(f, s(e, "reason"));
		fputs("\n    evidence: ", f);
		put(f, strcmp(s(e, "evidence"), "-") ? s(e, "evidence") :
		    "none given");
		fputc('\n', f);
	}
	x = cJSON_GetObjectItemCaseSensitive(d, "audit");
	if (cJSON_GetArraySize(x) > 0)
		fputs("audit:\n", f);
	cJSON_ArrayForEach(e, x) {
		fprintf(f, "  %s ", when(e, "at", now, a, sizeof(a)));
		put(f, s(e, "command"));
		fputs(" by ", f);
		put(f, s(e, "actor"));
		fputs(": ", f);
		put(f, s(e, "result"));
		if (strcmp(s(e, "reason"), "-") != 0) {
			fputs("; reason: ", f);
			put(f, s(e, "reason"));
		}
		fputc('\n', f);
		if (strcmp(s(e, "what"), "-") == 0)
			continue;
		fputs("    ", f);
		put(f, s(e, "what"));
		if (strcmp(s(e, "why"), "-") != 0) {
			fputs(": ", f);
			put(f, s(e, "why"));
		}
		fputc('\n', f);
	}
	x = cJSON_GetObjectItemCaseSensitive(d, "headers");
	if (cJSON_GetArraySize(x) > 0)
		fputs("headers (x-death: the timeline above):\n", f);
	cJSON_ArrayForEach(e, x) {
		if (strcmp(e->string, "x-death") == 0)
			continue;
		fputs("  ", f);
		dlq_term_put(f, e->string, -1, 24);
		fputc(' ', f);
		put_value(f, e);
		fputc('\n', f);
	}
	if ((e = cJSON_GetObjectItemCaseSensitive(d, "payload")) != NULL &&
	    cJSON_IsString(e)) {
		fputs("payload:\n", f);
		dlq_term_put_lines(f, e->valuestring);
		fputc('\n', f);
	}
	else if (cJSON_IsString(e = cJSON_GetObjectItemCaseSensitive(d,
	    "payload_base64")))
		fprintf(f, "payload (base64):\n%s\n", e->valuestring);
}

static void
counts(FILE *f, const char *title, const cJSON *o)
{
	const cJSON *e;

	fprintf(f, "%s:\n", title);
	if (cJSON_GetArraySize(o) == 0)
		fputs("  (none)\n", f);
	cJSON_ArrayForEach(e, o) {
		fputs("  ", f);
		dlq_term_put(f, e->string, -1, 30);
		fprintf(f, " %lld\n", (long long)e->valuedouble);
	}
}

static void
escalations(FILE *f, const cJSON *e)
{
	const cJSON *c;
	char a[32];

	fprintf(f, "escalations:\n  past escalate-at without a decision  %lld\n"
	    "  open without owner past owner SLA    %lld\n",
	    (long long)n(e, "past_escalate_at"), (long long)n(e,
	    "unowned_past_sla"));
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(e, "cases")) {
		fprintf(f, "  #%-7lld ", (long long)n(c, "id"));
		dlq_term_put(f, s(c, "queue"), -1, 28);
		fputc(' ', f);
		dlq_term_put(f, s(c, "kind"), -1, 12);
		fprintf(f, " %s overdue", dlq_format_age(n(c, "overdue_ms"), a,
		    sizeof(a)));
		if (strcmp(s(c, "owner"), "-") != 0) {
			fputs("  ", f);
			put(f, s(c, "owner"));
		}
		fputc('\n', f);
	}
}

static void
decisions(FILE *f, const cJSON *d)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(d, "time_to_owner_ms");
	char a[32], b[32], c[32];

	fprintf(f, "decisions:\n");
	if (n(t, "count") > 0)
		fprintf(f, "  time to owner        p50 %s  p90 %s  max %s  (%lld "
		    "cases)\n", dlq_format_age(n(t, "p50"), a, sizeof(a)),
		    dlq_format_age(n(t, "p90"), b, sizeof(b)),
		    dlq_format_age(n(t, "max"), c, sizeof(c)),
		    (long long)n(t, "count"));
	else
		fprintf(f, "  time to owner        - (no case assigned yet)\n");
	fprintf(f, "  oldest awaiting      %s\n", n(d,
	    "oldest_awaiting_decision_age_ms") < 0 ? "-" : dlq_format_age(n(d,
	    "oldest_awaiting_decision_age_ms"), a, sizeof(a)));
	fprintf(f, "  replays w/o evidence %lld\n  most dead cycles     %lld\n",
	    (long long)n(d, "replays_without_evidence"),
	    (long long)n(d, "max_cycles_per_message"));
}

static void
redrive(FILE *f, const cJSON *r)
{
	const cJSON *e;

	fprintf(f, "redrive:\n  left for humans      %lld\n",
	    (long long)n(r, "left_for_humans"));
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(r,
	    "outcomes")) {
		fputs("  ", f);
		dlq_term_put(f, e->string, -1, 20);
		fprintf(f, " %lld\n", (long long)e->valuedouble);
	}
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(r,
	    "circuits_open")) {
		fputs("  circuit OPEN         ", f);
		put(f, cJSON_IsString(e) ? e->valuestring : "-");
		fputs(" (dlqctl redrive resume ", f);
		put(f, cJSON_IsString(e) ? e->valuestring : "-");
		fputs(" --reason TEXT)\n", f);
	}
}

/* Per queue, the share of its messages of the last hour that died. */
static void
traffic(FILE *f, const cJSON *t)
{
	const cJSON *q, *share;
	char pub[24], pct[24];

	if (t == NULL)
		return;
	fputs("share of traffic, last hour:", f);
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "reported"))) {
		fputs(" not reported (", f);
		put(f, s(t, "why"));
		fputs(")\n", f);
		return;
	}
	fputc('\n', f);
	if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(t,
	    "queues")) == 0) {
		fputs("  (no dead letters)\n", f);
		return;
	}
	fprintf(f, "  %-30s %-8s %-10s %s\n", "QUEUE", "DEAD", "PUBLISHED",
	    "SHARE");
	cJSON_ArrayForEach(q, cJSON_GetObjectItemCaseSensitive(t, "queues")) {
		share = cJSON_GetObjectItemCaseSensitive(q, "share");
		snprintf(pub, sizeof(pub), "%lld", (long long)n(q, "published"));
		snprintf(pct, sizeof(pct), "%.1f %%", cJSON_IsNumber(share) ?
		    share->valuedouble * 100 : 0);
		fputs("  ", f);
		dlq_term_put(f, s(q, "queue"), -1, 30);
		fprintf(f, " %-8lld %-10s %s\n", (long long)n(q,
		    "dead_lettered"), n(q, "published") < 0 ? "-" : pub,
		    cJSON_IsNumber(share) ? pct : "-");
	}
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "windowed")))
		fputs("  (the broker keeps no samples: published is counted "
		    "since its statistics began)\n", f);
}

void
dlq_view_stats(FILE *f, const cJSON *d)
{
	char a[32];
	int64_t oldest = n(d, "oldest_unresolved_age_ms");

	fprintf(f, "unresolved        %lld of %lld\n",
	    (long long)n(d, "unresolved"), (long long)n(d, "total"));
	fprintf(f, "oldest unresolved %s\n", oldest < 0 ? "-" :
	    dlq_format_age(oldest, a, sizeof(a)));
	fprintf(f, "new last hour     %lld\n", (long long)n(d, "new_last_hour"));
	fprintf(f, "new last day      %lld\n", (long long)n(d, "new_last_day"));
	fprintf(f, "replay unknown    %lld%s\n",
	    (long long)n(d, "replaying_unknown"), n(d, "replaying_unknown") > 0 ?
	    " (list --status replaying; arrived: drop ID, else replay ID "
	    "--force)" : "");
	fprintf(f, "repeated cycles   %lld\n", (long long)n(d, "repeated_cycles"));
	fprintf(f, "payloads purged   %lld\n", (long long)n(d, "payloads_purged"));
	counts(f, "unresolved by queue",
	    cJSON_GetObjectItemCaseSensitive(d, "by_queue"));
	counts(f, "unresolved by class",
	    cJSON_GetObjectItemCaseSensitive(d, "by_class"));
	counts(f, "assigned by owner",
	    cJSON_GetObjectItemCaseSensitive(d, "by_owner"));
	counts(f, "all by status", cJSON_GetObjectItemCaseSensitive(d, "by_status"));
	traffic(f, cJSON_GetObjectItemCaseSensitive(d, "traffic"));
	escalations(f, cJSON_GetObjectItemCaseSensitive(d, "escalations"));
	decisions(f, cJSON_GetObjectItemCaseSensitive(d, "decisions"));
	redrive(f, cJSON_GetObjectItemCaseSensitive(d, "redrive"));
}

static void
group_tail_head(FILE *f, int wc)
{
	cell(f, "CLASS", wc);
	fprintf(f, "%-6s %-6s %-8s %s\n", "FIRST", "LAST", "SAMPLE", "ERROR");
}

/* A group's (or a cause's) class, first and last seen, sample id and
 * error text, and the end of its line. */
static void
group_tail(FILE *f, const cJSON *g, int wc, int64_t now)
{
	char a[32];

	cell(f, s(g, "class"), wc);
	fprintf(f, "%-6s ", dlq_format_age(now - n(g, "first_seen"), a,
	    sizeof(a)));
	fprintf(f, "%-6s %-8lld ", dlq_format_age(now - n(g, "last_seen"), a,
	    sizeof(a)), (long long)n(g, "sample_id"));
	dlq_term_put(f, error_text(g), 60, 0);
	fputc('\n', f);
}

void
dlq_view_groups(FILE *f, const cJSON *data, int64_t now)
{
	const cJSON *g;
	int wq = col_width(data, "queue", "QUEUE", 40);
	int wc = col_width(data, "class", "CLASS", 16);

	if (cJSON_GetArraySize(data) == 0) {
		fputs("no dead letters\n", f);
		return;
	}
	fprintf(f, "%-7s %-10s %-12s ", "COUNT", "UNRESOLVED", "SIGNATURE");
	cell(f, "QUEUE", wq);
	group_tail_head(f, wc);
	cJSON_ArrayForEach(g, data) {
		fprintf(f, "%-7lld %-10lld %-12s ", (long long)n(g, "count"),
		    (long long)n(g, "unresolved"), s(g, "signature"));
		cell(f, s(g, "queue"), wq);
		group_tail(f, g, wc, now);
	}
}

void
dlq_view_causes(FILE *f, const cJSON *data, int64_t now)
{
	const cJSON *c, *g, *groups;
	int wc = col_width(data, "class", "CLASS", 16);

	if (cJSON_GetArraySize(data) == 0) {
		fputs("no dead letters\n", f);
		return;
	}
	fprintf(f, "%-7s %-10s %-6s ", "COUNT", "UNRESOLVED", "QUEUES");
	group_tail_head(f, wc);
	fprintf(f, "  %-5s %-10s %-12s %s\n", "COUNT", "UNRESOLVED",
	    "SIGNATURE", "QUEUE");
	cJSON_ArrayForEach(c, data) {
		groups = cJSON_GetObjectItemCaseSensitive(c, "groups");
		fprintf(f, "%-7lld %-10lld %-6d ", (long long)n(c, "count"),
		    (long long)n(c, "unresolved"), cJSON_GetArraySize(groups));
		group_tail(f, c, wc, now);
		cJSON_ArrayForEach(g, groups) {
			fprintf(f, "  %-5lld %-10lld %-12s ",
			    (long long)n(g, "count"),
			    (long long)n(g, "unresolved"), s(g, "signature"));
			put(f, s(g, "queue"));
			fputc('\n', f);
		}
	}
}

void
dlq_view_changes(FILE *f, const cJSON *d, const char *verb)
{
	const cJSON *r;

	fprintf(f, "%s %lld\n", verb, (long long)n(d, "changed"));
	cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(d, "results")) {
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok")))
			continue;
		fprintf(f, "  %lld: ", (long long)n(r, "id"));
		put(f, s(r, "error"));
		fputc('\n', f);
	}
}

void
dlq_view_audit(FILE *f, const cJSON *data, int64_t now)
{
	const cJSON *r;
	char a[32], *args;

	if (cJSON_GetArraySize(data) == 0) {
		fputs("no audit entries match\n", f);
		return;
	}
	fprintf(f, "%-8s %-10s %-12s %-14s %-40s %s\n", "ID", "WHEN", "ACTOR",
	    "COMMAND", "ARGS", "RESULT");
	cJSON_ArrayForEach(r, data) {
		args = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(r,
		    "args"));
		fprintf(f, "%-8lld %-10s ", (long long)n(r, "id"), age(r, "at",
		    now, a, sizeof(a)));
		dlq_term_put(f, s(r, "actor"), -1, 12);
		fputc(' ', f);
		dlq_term_put(f, s(r, "command"), -1, 14);
		fputc(' ', f);
		cell(f, args ? args : "-", 40);
		put(f, s(r, "result"));
		fputc('\n', f);
		cJSON_free(args);
	}
}

void
dlq_view_redrive(FILE *f, const cJSON *data, int64_t now)
{
	const cJSON *q;
	char a[32];

	if (cJSON_GetArraySize(data) == 0) {
		fputs("redrive is off (no redrive.queues)\n", f);
		return;
	}
	fprintf(f, "%-28s %-8s %-10s %-16s %s\n", "QUEUE", "CIRCUIT",
	    "PUBLISHED", "LEFT FOR HUMANS", "TRIPPED");
	cJSON_ArrayForEach(q, data) {
		dlq_term_put(f, s(q, "queue"), -1, 28);
		fputc(' ', f);
		dlq_term_put(f, s(q, "circuit"), -1, 8);
		fprintf(f, " %-10lld %-16lld ", (long long)n(q, "published"),
		    (long long)n(q, "left_for_humans"));
		if (n(q, "tripped_at") > 0)
			fprintf(f, "%s (%lld of %lld came back)\n", age(q,
			    "tripped_at", now, a, sizeof(a)),
			    (long long)n(q, "returned"), (long long)n(q,
			    "redriven"));
		else
			fputs("-\n", f);
	}
}
