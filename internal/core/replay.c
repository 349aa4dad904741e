/* replay.c - eligibility and the headers of a replayed message. */
#include "replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "deadletter.h"

bool
dlq_replay_eligible(const struct dlq_replay_policy *p,
    const struct dlq_replay_facts *f, bool force, char *why, size_t n)
{
	char a[32], b[32];
	size_t i;

	if (strcmp(f->status, "open") != 0 && strcmp(f->status, "assigned") != 0 &&
	    !(force && strcmp(f->status, "replaying") == 0)) {
		snprintf(why, n, strcmp(f->status, "replaying") == 0 ?
		    "status is replaying (a replay's outcome is unknown; check "
		    "it arrived, then --force)" : "status is %s", f->status);
		return false;
	}
	if (p->max_age_ms > 0 && f->age_ms > p->max_age_ms) {
		snprintf(why, n, "older than replay.max_age (%s > %s)",
		    dlq_format_age(f->age_ms, a, sizeof(a)),
		    dlq_format_age(p->max_age_ms, b, sizeof(b)));
		return false;
	}
	if (f->replay_count >= p->max_replays) {
		snprintf(why, n, "already replayed %lld times (replay.max_replays "
		    "%lld)", (long long)f->replay_count, (long long)p->max_replays);
		return false;
	}
	for (i = 0; !force && i < p->never.n; i++)
		if (strcmp(p->never.v[i], f->class) == 0) {
			snprintf(why, n, "class %s is never replayed (--force "
			    "with --reason to override)", f->class);
			return false;
		}
	if (p->require_owner && f->owner == NULL) {
		snprintf(why, n, "no owner (replay.require_owner)");
		return false;
	}
	if (p->evidence_max_age_ms > 0 && f->evidence_age_ms < 0) {
		snprintf(why, n, "no evidence (replay.evidence_max_age %s: give "
		    "--evidence TEXT)", dlq_format_age(p->evidence_max_age_ms, b,
		    sizeof(b)));
		return false;
	}
	if (p->evidence_max_age_ms > 0 &&
	    f->evidence_age_ms > p->evidence_max_age_ms) {
		snprintf(why, n, "evidence is %s old (replay.evidence_max_age %s: "
		    "check again, give --evidence TEXT)",
		    dlq_format_age(f->evidence_age_ms, a, sizeof(a)),
		    dlq_format_age(p->evidence_max_age_ms, b, sizeof(b)));
		return false;
	}
	return true;
}

void
dlq_replay_target_name(const char *exchange, const char *routing_key,
    char *buf, size_t n)
{
	snprintf(buf, n, "%s/%s", exchange[0] ? exchange : "(default)",
	    routing_key);
}

int64_t
dlq_replay_born_ms(uint64_t timestamp, int64_t died_ms)
{
	int64_t ms = dlq_timestamp_ms(timestamp, NULL);

	return ms > 0 && ms < died_ms ? ms : died_ms;
}

void
dlq_replay_policy_json(const struct dlq_replay_policy *p, struct dlq_buf *b)
{
	size_t i;

	dlq_buf_printf(b, "{\"max_age_ms\":%lld,\"max_replays\":%lld,"
	    "\"require_owner\":%s,\"evidence_max_age_ms\":%lld,\"never\":[",
	    (long long)p->max_age_ms, (long long)p->max_replays,
	    p->require_owner ? "true" : "false",
	    (long long)p->evidence_max_age_ms);
	for (i = 0; i < p->never.n; i++) {
		if (i > 0)
			dlq_buf_addc(b, ',');
		dlq_buf_json_cstr(b, p->never.v[i]);
	}
	dlq_buf_adds(b, "]}");
}

static bool
error_header(amqp_bytes_t k, const struct dlq_strlist *l)
{
	size_t i;

	for (i = 0; l != NULL && i < l->n; i++)
		if (k.len == strlen(l->v[i]) && memcmp(k.bytes, l->v[i],
		    k.len) == 0)
			return true;
	return false;
}

static bool
broker_owned(amqp_bytes_t k, bool reset_retries)
{
	static const char *const exact[] = { "x-death", "x-replay-count",
	    "x-replayed-by", "x-replayed-at", "x-replay-reason", "x-replay-of",
	    NULL };
	const char *const *e;

	if ((k.len > 13 && memcmp(k.bytes, "x-first-death", 13) == 0) ||
	    (k.len > 12 && memcmp(k.bytes, "x-last-death", 12) == 0))
		return true;
	if (reset_retries && k.len == 13 && memcmp(k.bytes, "x-retry-count",
	    13) == 0)
		return true;
	for (e = exact; *e != NULL; e++)
		if (k.len == strlen(*e) && memcmp(k.bytes, *e, k.len) == 0)
			return true;
	return false;
}

int
dlq_replay_headers(const amqp_table_t *orig, bool reset_retries,
    const struct dlq_replay_mark *m, amqp_table_entry_t extra[5],
    amqp_table_t *out)
{
	int i, n = 0;

	out->entries = calloc((size_t)(orig ? orig->num_entries : 0) + 5,
	    sizeof(*out->entries));
	if (out->entries == NULL)
		return -1;
	for (i = 0; orig != NULL && i < orig->num_entries; i++)
		if (!broker_owned(orig->entries[i].key, reset_retries) &&
		    !error_header(orig->entries[i].key, m->error_headers))
			out->entries[n++] = orig->entries[i];
	extra[0].key = amqp_cstring_bytes("x-replay-count");
	extra[0].value.kind = AMQP_FIELD_KIND_I32;
	extra[0].value.value.i32 = (int32_t)m->replay_count;
	extra[1].key = amqp_cstring_bytes("x-replayed-by");
	extra[1].value.kind = AMQP_FIELD_KIND_UTF8;
	extra[1].value.value.bytes = amqp_cstring_bytes(m->by);
	extra[2].key = amqp_cstring_bytes("x-replayed-at");
	extra[2].value.kind = AMQP_FIELD_KIND_TIMESTAMP;
	extra[2].value.value.u64 = (uint64_t)m->at_s;
	extra[3].key = amqp_cstring_bytes("x-replay-reason");
	extra[3].value.kind = AMQP_FIELD_KIND_UTF8;
	extra[3].value.value.bytes.bytes = (void *)m->reason;
	extra[3].value.value.bytes.len = dlq_utf8_prefix(m->reason,
	    strlen(m->reason) < DLQ_REPLAY_REASON_MAX ? strlen(m->reason) :
	    DLQ_REPLAY_REASON_MAX);
	extra[4].key = amqp_cstring_bytes("x-replay-of");
	extra[4].value.kind = AMQP_FIELD_KIND_I64;
	extra[4].value.value.i64 = m->replay_of;
	for (i = 0; i < 5; i++)
		if (i != 4 || m->replay_of > 0)
			out->entries[n++] = extra[i];
	out->num_entries = n;
	return 0;
}

void
dlq_replay_headers_free(amqp_table_t *t)
{
	free(t->entries);
	t->entries = NULL;
	t->num_entries = 0;
}
