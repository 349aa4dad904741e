/* replaylive.c - dlqctl replay --from-queue: the messages of a DLQ the
 * worker does not monitor, judged by the same policy, published with
 * confirms, and only then taken off their queue (replaylive.h). */
#include "replaylive.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "amqp.h"
#include "classify.h"
#include "proto.h"
#include "deadletter.h"
#include "publisher.h"
#include "redact.h"
#include "replay.h"
#include "replaytarget.h"
#include "stopsig.h"
#include "termtext.h"

#include "replaytally.h"

/* Facts about a live delivery, for the same policy as archived ones. */
static bool
judge_live(const struct dlq_config *c, const struct dlq_classifier *k,
    const struct dlq_dead_letter *d, const char *queue, bool has_evidence,
    char *why, size_t n, int64_t *replay_count)
{
	struct dlq_redact r = { &c->mask_keys, c->mask_emails,
	    (int)c->mask_digits_min, DLQ_ERROR_TEXT_MAX, 0 };
	struct dlq_classification cl;
	struct dlq_replay_policy p;
	struct dlq_replay_facts f;
	const amqp_field_value_t *v;
	struct dlq_buf err;
	char reason[32];
	int64_t died = dlq_wall_ms(), first;
	bool ok;

	dlq_buf_init(&err);
	dlq_deadletter_error_text(d, &r, DLQ_ERROR_TEXT_MAX, &err);
	snprintf(reason, sizeof(reason), "%.*s", d->n_xdeath > 0 &&
	    d->xdeath[0].reason.p ? (int)d->xdeath[0].reason.n : 7,
	    d->n_xdeath > 0 && d->xdeath[0].reason.p ? d->xdeath[0].reason.p :
	    "unknown");
	dlq_classify(k, queue, reason, err.data ? err.data : "", &cl);
	if ((first = dlq_deadletter_first_death_ms(d)) > 0)
		died = first;
	*replay_count = 0;
	if ((d->props->_flags & AMQP_BASIC_HEADERS_FLAG) &&
	    (v = dlq_table_get(&d->props->headers, "x-replay-count")) != NULL)
		dlq_field_to_i64(v, replay_count);
	f.status = "open";
	f.class = cl.class;
	f.owner = NULL;
	f.age_ms = dlq_wall_ms() - dlq_replay_born_ms(d->props->_flags &
	    AMQP_BASIC_TIMESTAMP_FLAG ? d->props->timestamp : 0, died);
	f.replay_count = *replay_count;
	f.evidence_age_ms = has_evidence ? 0 : -1;	/* given now, or none */
	dlq_config_replay_policy(c, queue, &p);
	ok = dlq_replay_eligible(&p, &f, false, why, n);
	dlq_buf_release(&err);
	return ok;
}

/* A live dry run's line for one delivery: its message id, eligible or
 * not, where it would go, why not. */
static void
plan_add(struct dlq_tally *t, const char *message_id, bool eligible,
    const char *exchange, const char *routing_key, const char *why)
{
	cJSON *p;

	if (t->plan == NULL || (p = cJSON_CreateObject()) == NULL)
		return;
	if (message_id[0] != '\0')
		cJSON_AddStringToObject(p, "message_id", message_id);
	else
		cJSON_AddNullToObject(p, "message_id");
	cJSON_AddBoolToObject(p, "eligible", eligible);
	cJSON_AddStringToObject(p, "exchange", exchange);
	cJSON_AddStringToObject(p, "routing_key", routing_key);
	if (why != NULL)
		cJSON_AddStringToObject(p, "why", why);
	cJSON_AddItemToArray(t->plan, p);
}

/* One live delivery: judged, and published when eligible and executing.
 * Returns true when it was replayed (to be acked); *deliveries is its
 * x-delivery-count, -1 without one. */
static bool
replay_live(const struct dlq_config *c, const struct dlq_replay_opts *o,
    struct dlq_publisher *pub, const struct dlq_classifier *k,
    amqp_message_t *msg, amqp_bytes_t rk, struct dlq_tally *t, const char *me,
    int64_t *deliveries)
{
	struct dlq_dead_letter d;
	struct dlq_str dlq = { o->from_queue, strlen(o->from_queue) };
	struct dlq_str fallback = { rk.bytes, rk.len };
	amqp_basic_properties_t props = msg->properties;
	amqp_table_entry_t extra[5];
	struct dlq_replay_mark mark;
	enum dlq_pub_outcome out;
	const char *to_ex = o->to_exchange ? o->to_exchange : "", *to_rk;
	char why[256], queue[256], id[256], detail[512];
	bool loops;

	dlq_deadletter_decode(&d, &msg->properties, msg->body, dlq, fallback,
	    &c->error_headers);
	*deliveries = d.has_delivery_count ? d.delivery_count : -1;
	snprintf(queue, sizeof(queue), "%.*s", (int)d.queue.n, d.queue.p ?
	    d.queue.p : "");
	snprintf(id, sizeof(id), "%.*s", (int)d.message_id.n, d.message_id.p ?
	    d.message_id.p : "");
	/* the run's target, else the queue it died in */
	to_rk = o->routing_key ? o->routing_key : queue;
	/* no x-death names another queue: a copy would be read again by
	 * this very run */
	loops = to_ex[0] == '\0' && strcmp(to_rk, o->from_queue) == 0;
	if (loops)
		snprintf(why, sizeof(why), "its target is the queue it is read "
		    "from (no x-death names another): give --to-exchange and "
		    "--routing-key");
	if (loops || !judge_live(c, k, &d, queue, o->evidence != NULL, why,
	    sizeof(why), &mark.replay_count)) {
		plan_add(t, id, false, to_ex, to_rk, why);
		dlq_tally_refuse(t, 0, id[0] ? id : NULL, why);
		return false;
	}
	if (!o->execute) {
		t->published++;
		plan_add(t, id, true, to_ex, to_rk, NULL);
		dlq_replay_targets_add(t->targets, to_ex, to_rk);
		return false;
	}
	dlq_tally_pace(t, o->rate);
	t->posted++;
	mark.replay_count++;
	mark.by = me;
	mark.at_s = dlq_wall_ms() / 1000;
	mark.reason = o->reason;
	mark.replay_of = 0;
	mark.error_headers = &c->error_headers;
	if (dlq_replay_headers((msg->properties._flags & AMQP_BASIC_HEADERS_FLAG)
	    ? &msg->properties.headers : NULL, o->reset_retries, &mark, extra,
	    &props.headers) == -1)
		return false;
	props._flags |= AMQP_BASIC_HEADERS_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG;
	props.delivery_mode = 2;
	if ((props._flags & AMQP_BASIC_USER_ID_FLAG) &&
	    (props.user_id.len != strlen(c->broker.user) ||
	    memcmp(props.user_id.bytes, c->broker.user, props.user_id.len) != 0))
		props._flags &= ~AMQP_BASIC_USER_ID_FLAG;
	props._flags &= ~AMQP_BASIC_EXPIRATION_FLAG;
	out = dlq_publisher_send(pub, to_ex, to_rk, &props, msg->body, detail,
	    sizeof(detail));
	dlq_replay_headers_free(&props.headers);
	dlq_tally_result(t, 0, id[0] ? id : NULL, out, detail);
	return out == DLQ_PUB_OK;
}

/* For the tests only: DLQ_FAULT_LOSE_BEFORE_ACK=1 breaks the connection
 * after a live delivery's copy was confirmed, before its ack (a network
 * that fails just then). Compiled only into the test build
 * (DLQ_TEST_HOOKS). */
static bool
fault_lose_before_ack(void)
{
#ifdef DLQ_TEST_HOOKS
	const char *v = getenv("DLQ_FAULT_LOSE_BEFORE_ACK");

	return v != NULL && strcmp(v, "1") == 0;
#else
	return false;
#endif
}

/* A live delivery was published, but the connection it was read on is
 * gone before its ack: the original goes back to the queue, and a later
 * run would send it again. Said at once, counted, and the run fails. */
static void
original_back(struct dlq_tally *t, const char *queue, const amqp_message_t *m)
{
	char id[256] = "none";

	if (m->properties._flags & AMQP_BASIC_MESSAGE_ID_FLAG)
		snprintf(id, sizeof(id), "%.*s",
		    (int)m->properties.message_id.len,
		    (const char *)m->properties.message_id.bytes);
	t->originals_back++;
	fputs("dlqctl: replayed, but the connection was lost before its "
	    "original was acked: it is back in ", stderr);
	dlq_term_put(stderr, queue, -1, 0);
	fputs(" and a later run would send it again; take it out first "
	    "(message id ", stderr);
	dlq_term_put(stderr, id, -1, 0);
	fputs(")\n", stderr);
}

int
dlq_replay_live(const struct dlq_config *c, const struct dlq_replay_opts *o)
{
	struct dlq_classifier *k;
	struct dlq_publisher *pub;
	amqp_connection_state_t conn;
	amqp_basic_get_ok_t *ok;
	amqp_rpc_reply_t r;
	amqp_message_t msg;
	struct dlq_tally t;
	const cJSON *item;
	uint64_t tag;
	int64_t deliveries;
	char why[512], me[64], res[300], what[400];
	bool unread = false;	/* stopped by a failed read, not the end */
	bool lost = false;	/* the connection, after a publish */
	bool lose_ack = fault_lose_before_ack();
	int rc;

	snprintf(what, sizeof(what), "replay --from-queue %s%s", o->from_queue,
	    o->execute ? " --execute" : " (dry run)");
	/* x-replayed-by: the caller as the worker sees it (SO_PEERCRED),
	 * the same name as the audit's */
	if ((rc = dlq_tally_note(c, o, what, "started", NULL, why, sizeof(why), me,
	    sizeof(me))) != DLQ_EXIT_OK) {
		fprintf(stderr, "dlqctl: %s (live-queue replays are audited by "
		    "the worker)\n", why);
		return rc;
	}
	if ((k = dlq_classify_new(c, NULL)) == NULL ||
	    (pub = dlq_publisher_open(c, "dlqctl replay", why,
	    sizeof(why))) == NULL) {
		fprintf(stderr, "dlqctl: %s\n", k ? why : "classifier failed");
		dlq_classify_free(k);
		return 1;
	}
	dlq_publisher_hold(pub);	/* it reads the deliveries */
	dlq_tally_init(&t);
	t.dry = !o->execute;
	t.results = cJSON_CreateArray();
	if (o->execute)
		t.refusals = cJSON_CreateArray();
	else {
		t.targets = cJSON_CreateArray();
		t.plan = cJSON_CreateArray();
	}
	t.total = (size_t)o->limit;
	t.start_ms = dlq_now_ms();
	/* Ineligible deliveries stay unacked until the end, so that basic.get
	 * does not hand them out again; then they all go back at once. */
	while (!dlq_stop_asked() && !t.blocked && t.done < (size_t)o->limit &&
	    (conn = dlq_publisher_conn(pub)) != NULL) {
		amqp_maybe_release_buffers(conn);
		r = amqp_basic_get(conn, DLQ_AMQP_CHANNEL,
		    amqp_cstring_bytes(o->from_queue), 0);
		if (r.reply_type != AMQP_RESPONSE_NORMAL) {
			fprintf(stderr, "dlqctl: cannot read %s: %s\n",
			    o->from_queue, dlq_amqp_reply_text(r, why, sizeof(why)));
			unread = true;
			break;
		}
		if (r.reply.id != AMQP_BASIC_GET_OK_METHOD)
			break;		/* empty */
		ok = r.reply.decoded;
		tag = ok->delivery_tag;
		r = amqp_read_message(conn, DLQ_AMQP_CHANNEL, &msg, 0);
		if (r.reply_type != AMQP_RESPONSE_NORMAL) {
			fprintf(stderr, "dlqctl: cannot read a message of %s: "
			    "%s\n", o->from_queue, dlq_amqp_reply_text(r, why,
			    sizeof(why)));
			unread = true;
			break;
		}
		t.done++;
		if (!replay_live(c, o, pub, k, &msg, ok->routing_key, &t, me,
		    &deliveries))
			dlq_tally_note_return(&t, deliveries);
		else {
			if ((conn = dlq_publisher_conn(pub)) != NULL && lose_ack)
				shutdown(amqp_get_sockfd(conn), SHUT_RDWR);
			if (conn == NULL || amqp_basic_ack(conn,
			    DLQ_AMQP_CHANNEL, tag, 0) != AMQP_STATUS_OK) {
				original_back(&t, o->from_queue, &msg);
				lost = true;	/* nothing more to read on it */
			}
		}
		/* a blocked connection would hang the next basic.get */
		t.blocked = o->execute && dlq_publisher_blocked(pub);
		amqp_destroy_message(&msg);
		dlq_tally_progress(&t, false);
		if (lost)
			break;
	}
	if ((conn = dlq_publisher_conn(pub)) != NULL)
		amqp_basic_nack(conn, DLQ_AMQP_CHANNEL, 0, 1, 1);
	t.total = t.done;
	if (t.targets != NULL)
		dlq_tally_look_targets(c, &t);
	if (!o->json && cJSON_GetArraySize(t.plan) > 0) {
		printf("%-24s %-9s %-40s %s\n", "MESSAGE_ID", "ELIGIBLE",
		    "TARGET", "WHY NOT");
		cJSON_ArrayForEach(item, t.plan)
			dlq_tally_plan_line(item);
	}
	rc = dlq_tally_summary(&t, o->json);
	if (unread && rc == DLQ_EXIT_OK)
		rc = DLQ_EXIT_ERROR;
	snprintf(res, sizeof(res), "examined %zu: %s %zu, refused %zu, failed "
	    "%zu, unknown %zu%s%s", t.done, t.dry ? "eligible" : "published",
	    t.published, t.refused, t.failed, t.unknown, unread ?
	    "; stopped: the queue could not be read" : "", lost ?
	    "; stopped: the connection was lost before an ack, the original "
	    "of one published is back in the queue" : "");
	if (dlq_tally_note(c, o, what, res, &t, why, sizeof(why), NULL, 0) !=
	    DLQ_EXIT_OK)
		fprintf(stderr, "dlqctl: could not audit the result: %s\n", why);
	cJSON_Delete(t.refusals);
	cJSON_Delete(t.results);
	cJSON_Delete(t.targets);
	cJSON_Delete(t.plan);
	dlq_publisher_close(pub);
	dlq_classify_free(k);
	return rc;
}

