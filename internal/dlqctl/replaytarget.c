/* replaytarget.c - where a dry run's replay (or a canary) would go,
 * looked at on the broker with passive declares. */
#include "replaytarget.h"

#include <amqp.h>
#include <string.h>

#include "amqp.h"
#include "replay.h"
#include "termtext.h"

static const char *
str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : "";
}

void
dlq_replay_targets_add(cJSON *targets, const char *exchange,
    const char *routing_key)
{
	cJSON *t, *count;

	cJSON_ArrayForEach(t, targets)
		if (strcmp(str(t, "exchange"), exchange) == 0 &&
		    strcmp(str(t, "routing_key"), routing_key) == 0)
			break;
	if (t == NULL) {
		if (cJSON_GetArraySize(targets) >= DLQ_REPLAY_TARGETS_MAX)
			return;
		t = cJSON_CreateObject();
		cJSON_AddStringToObject(t, "exchange", exchange);
		cJSON_AddStringToObject(t, "routing_key", routing_key);
		cJSON_AddNumberToObject(t, "count", 0);
		cJSON_AddItemToArray(targets, t);
	}
	if ((count = cJSON_GetObjectItem(t, "count")) != NULL)
		cJSON_SetNumberValue(count, count->valuedouble + 1);
}

/* Looks at one target. Returns -1 when the connection is no longer
 * usable (the problem is said in `t`). */
static int
look(amqp_connection_state_t conn, cJSON *t)
{
	const char *ex = str(t, "exchange"), *rk = str(t, "routing_key");
	amqp_queue_declare_ok_t *q = NULL;
	amqp_rpc_reply_t r;
	char why[300], text[600];
	int code = 0;

	/* the default exchange cannot be declared, even passively: it
	 * routes to the queue named by the key */
	if (ex[0] == '\0')
		q = amqp_queue_declare(conn, DLQ_AMQP_CHANNEL,
		    amqp_cstring_bytes(rk), 1, 0, 0, 0, amqp_empty_table);
	else
		amqp_exchange_declare(conn, DLQ_AMQP_CHANNEL,
		    amqp_cstring_bytes(ex), amqp_empty_bytes, 1, 0, 0, 0,
		    amqp_empty_table);
	r = amqp_get_rpc_reply(conn);
	if (r.reply_type == AMQP_RESPONSE_NORMAL) {
		cJSON_AddTrueToObject(t, "exists");
		if (q != NULL) {
			cJSON_AddNumberToObject(t, "messages", q->message_count);
			cJSON_AddNumberToObject(t, "consumers",
			    q->consumer_count);
		}
		return 0;
	}
	if (dlq_amqp_is_channel_error(r, &code) && code == AMQP_NOT_FOUND) {
		cJSON_AddFalseToObject(t, "exists");
		snprintf(text, sizeof(text), "no %s '%s' on the broker: these "
		    "would fail", ex[0] ? "exchange" : "queue", ex[0] ? ex : rk);
	} else
		snprintf(text, sizeof(text), "could not be looked at: %s",
		    dlq_amqp_reply_text(r, why, sizeof(why)));
	cJSON_AddStringToObject(t, "problem", text);
	if (code != 0 && dlq_amqp_reopen_channel(conn) == 0)
		return 0;
	return -1;
}

int
dlq_replay_targets_look(const struct dlq_config *c, cJSON *targets,
    char *why, size_t n)
{
	amqp_connection_state_t conn;
	enum dlq_amqp_status st;
	cJSON *t;

	if (cJSON_GetArraySize(targets) == 0)
		return 0;
	if ((conn = dlq_amqp_connect(c, "dlqctl replay (dry run)", &st, why,
	    n)) == NULL)
		return -1;
	cJSON_ArrayForEach(t, targets)
		if (look(conn, t) == -1)
			break;
	dlq_amqp_close(conn);
	return 0;
}

bool
dlq_replay_targets_unconsumed(const cJSON *targets, char *why, size_t n)
{
	const cJSON *t, *exists, *consumers;
	const char *q;

	cJSON_ArrayForEach(t, targets) {
		if (str(t, "exchange")[0] != '\0')
			continue;
		q = str(t, "routing_key");
		exists = cJSON_GetObjectItem(t, "exists");
		consumers = cJSON_GetObjectItem(t, "consumers");
		if (exists == NULL)
			snprintf(why, n, "queue '%s' could not be looked at", q);
		else if (!cJSON_IsTrue(exists))
			snprintf(why, n, "no queue '%s' on the broker", q);
		else if (!cJSON_IsNumber(consumers) || consumers->valuedouble < 1)
			snprintf(why, n, "no consumer on queue '%s'", q);
		else
			continue;
		return true;
	}
	return false;
}

void
dlq_replay_targets_print(FILE *f, const cJSON *targets)
{
	const cJSON *t, *consumers;
	char target[600];
	long long k;

	if (cJSON_GetArraySize(targets) == 0)
		return;
	fprintf(f, "%-40s %-9s %s\n", "TARGET", "MESSAGES", "ON THE BROKER");
	cJSON_ArrayForEach(t, targets) {
		dlq_replay_target_name(str(t, "exchange"), str(t, "routing_key"),
		    target, sizeof(target));
		dlq_term_put(f, target, -1, 40);
		fprintf(f, " %-9lld ", (long long)cJSON_GetObjectItem(t,
		    "count")->valuedouble);
		consumers = cJSON_GetObjectItem(t, "consumers");
		if (cJSON_HasObjectItem(t, "problem"))
			dlq_term_put(f, str(t, "problem"), -1, 0);
		else if (!cJSON_IsTrue(cJSON_GetObjectItem(t, "exists")))
			fputs("not looked at (the connection was lost)", f);
		else if (consumers == NULL)
			fputs("exchange exists (a message no queue is bound for "
			    "comes back: failed)", f);
		else {
			fprintf(f, "queue exists: %lld ready, ", (long long)
			    cJSON_GetObjectItem(t, "messages")->valuedouble);
			if ((k = (long long)consumers->valuedouble) == 0)
				fputs("no consumer (replayed messages wait "
				    "there)", f);
			else
				fprintf(f, "%lld consumer%s", k, k == 1 ? "" :
				    "s");
		}
		fputc('\n', f);
	}
}
