/* replaysend.c - publish what a replay claim handed out. */
#include "replaysend.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amqp.h"
#include "replay.h"

/* The text properties a replay carries as they were; user_id apart. */
static const struct {
	const char	*key;
	size_t		 off;
	amqp_flags_t	 flag;
} text_props[] = {
	{ "message_id", offsetof(amqp_basic_properties_t, message_id),
	    AMQP_BASIC_MESSAGE_ID_FLAG },
	{ "correlation_id", offsetof(amqp_basic_properties_t, correlation_id),
	    AMQP_BASIC_CORRELATION_ID_FLAG },
	{ "type", offsetof(amqp_basic_properties_t, type),
	    AMQP_BASIC_TYPE_FLAG },
	{ "content_type", offsetof(amqp_basic_properties_t, content_type),
	    AMQP_BASIC_CONTENT_TYPE_FLAG },
	{ "content_encoding", offsetof(amqp_basic_properties_t,
	    content_encoding), AMQP_BASIC_CONTENT_ENCODING_FLAG },
	{ "app_id", offsetof(amqp_basic_properties_t, app_id),
	    AMQP_BASIC_APP_ID_FLAG },
	{ "reply_to", offsetof(amqp_basic_properties_t, reply_to),
	    AMQP_BASIC_REPLY_TO_FLAG },
};

/* The archived property `k` into *dst, its bytes exact: from `k`_b64
 * when the worker sent it (a short string need not be UTF-8 and may
 * hold a NUL, which JSON text would not carry as they are). 1 when set,
 * 0 when the message has none, -1 when its base64 does not decode. */
static int
prop_bytes(const cJSON *m, const char *k, amqp_pool_t *pool,
    amqp_bytes_t *dst)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, k), *raw;
	struct dlq_buf b;
	char key[40];
	int rc = 1;

	if (!cJSON_IsString(v))
		return 0;
	snprintf(key, sizeof(key), "%s_b64", k);
	raw = cJSON_GetObjectItemCaseSensitive(m, key);
	if (!cJSON_IsString(raw)) {
		*dst = amqp_cstring_bytes(v->valuestring);
		return 1;
	}
	dlq_buf_init(&b);
	if (dlq_base64_decode(raw->valuestring, &b) == -1)
		rc = -1;
	else if (b.len == 0)
		*dst = amqp_empty_bytes;
	else {
		amqp_pool_alloc_bytes(pool, b.len, dst);
		if (dst->bytes == NULL)
			rc = -1;
		else
			memcpy(dst->bytes, b.data, b.len);
	}
	dlq_buf_release(&b);
	return rc;
}

/* The archived timestamp, exact: from timestamp_u64 (a JSON number is a
 * double: one past 2^53, in nanoseconds, would go out as another), or
 * from a worker of before it. 1 when set, 0 when none, -1 when it does
 * not read. */
static int
timestamp(const cJSON *m, uint64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, "timestamp_u64");
	unsigned long long n;
	char *end;

	if (cJSON_IsString(v)) {
		errno = 0;
		n = strtoull(v->valuestring, &end, 10);
		if (errno != 0 || end == v->valuestring || *end != '\0' ||
		    v->valuestring[0] == '-')
			return -1;
		*out = (uint64_t)n;
		return 1;
	}
	v = cJSON_GetObjectItemCaseSensitive(m, "timestamp");	/* older */
	if (!cJSON_IsNumber(v))
		return 0;
	if (!(v->valuedouble > -9.2e18 && v->valuedouble < 1.8e19))
		return -1;
	*out = v->valuedouble < 0 ? (uint64_t)(int64_t)v->valuedouble :
	    (uint64_t)v->valuedouble;
	return 1;
}

/* Properties of the replayed message: the original ones; user_id only
 * when it is the user we publish as (the broker checks it). -1 when the
 * worker's message does not read. */
static int
build_props(const struct dlq_config *c, const cJSON *m, amqp_pool_t *pool,
    amqp_basic_properties_t *p, char *note, size_t n)
{
	const cJSON *v;
	amqp_bytes_t user;
	size_t i;
	int rc;

	memset(p, 0, sizeof(*p));
	p->_flags = AMQP_BASIC_DELIVERY_MODE_FLAG;
	p->delivery_mode = 2;
	for (i = 0; i < sizeof(text_props) / sizeof(text_props[0]); i++) {
		rc = prop_bytes(m, text_props[i].key, pool,
		    (amqp_bytes_t *)(void *)((char *)p + text_props[i].off));
		if (rc == -1)
			return -1;
		if (rc == 1)
			p->_flags |= text_props[i].flag;
	}
	note[0] = '\0';
	if ((rc = prop_bytes(m, "user_id", pool, &user)) == -1)
		return -1;
	if (rc == 1) {
		if (user.len == strlen(c->broker.user) && memcmp(user.bytes,
		    c->broker.user, user.len) == 0) {
			p->user_id = user;
			p->_flags |= AMQP_BASIC_USER_ID_FLAG;
		} else
			snprintf(note, n, "; user_id %s dropped (we publish as %s)",
			    cJSON_GetObjectItem(m, "user_id")->valuestring,
			    c->broker.user);
	}
	if ((rc = timestamp(m, &p->timestamp)) == -1)
		return -1;
	if (rc == 1)
		p->_flags |= AMQP_BASIC_TIMESTAMP_FLAG;
	if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(m, "priority"))) {
		p->priority = (uint8_t)v->valuedouble;
		p->_flags |= AMQP_BASIC_PRIORITY_FLAG;
	}
	return 0;
}

int
dlq_replay_post(const struct dlq_config *c, struct dlq_publisher *pub,
    const cJSON *claim, const char *reason, bool reset_retries,
    struct dlq_pub_pending *e)
{
	const cJSON *m = cJSON_GetObjectItem(claim, "message");
	amqp_table_entry_t extra[5];
	amqp_basic_properties_t props;
	struct dlq_replay_mark mark;
	struct dlq_buf headers, body;
	amqp_table_t orig = { 0, NULL };
	amqp_pool_t pool;
	amqp_bytes_t hb;
	size_t off = 0;
	int rc = -1;

	memset(e, 0, sizeof(*e));
	e->key = (int64_t)cJSON_GetObjectItem(claim, "id")->valuedouble;
	e->out = DLQ_PUB_FAILED;
	dlq_buf_init(&headers);
	dlq_buf_init(&body);
	init_amqp_pool(&pool, 4096);
	if (dlq_base64_decode(cJSON_GetObjectItem(m, "headers_b64")->valuestring,
	    &headers) == -1 || dlq_base64_decode(cJSON_GetObjectItem(m,
	    "body_b64")->valuestring, &body) == -1 ||
	    build_props(c, m, &pool, &props, e->note, sizeof(e->note)) == -1) {
		snprintf(e->detail, sizeof(e->detail), "bad message from the worker");
		goto out;
	}
	hb.bytes = headers.data;
	hb.len = headers.len;
	if (headers.len > 0 && amqp_decode_table(hb, &pool, &orig, &off) !=
	    AMQP_STATUS_OK) {
		snprintf(e->detail, sizeof(e->detail), "archived headers do not "
		    "decode");
		goto out;
	}
	mark.replay_count = (int64_t)cJSON_GetObjectItem(claim,
	    "replay_count")->valuedouble;
	mark.by = cJSON_GetObjectItem(claim, "actor")->valuestring;
	mark.at_s = dlq_wall_ms() / 1000;
	mark.reason = reason;
	mark.replay_of = e->key;
	mark.error_headers = &c->error_headers;
	if (dlq_replay_headers(&orig, reset_retries, &mark, extra,
	    &props.headers) == -1) {
		snprintf(e->detail, sizeof(e->detail), "out of memory");
		goto out;
	}
	props._flags |= AMQP_BASIC_HEADERS_FLAG;
	rc = dlq_publisher_post(pub,
	    cJSON_GetObjectItem(claim, "exchange")->valuestring,
	    cJSON_GetObjectItem(claim, "routing_key")->valuestring, &props,
	    (amqp_bytes_t){ body.len, body.data ? body.data : "" }, e);
	dlq_replay_headers_free(&props.headers);
out:
	if (rc == -1)
		e->settled = true;
	empty_amqp_pool(&pool);
	dlq_buf_release(&headers);
	dlq_buf_release(&body);
	return rc;
}

enum dlq_pub_outcome
dlq_replay_send(const struct dlq_config *c, struct dlq_publisher *pub,
    const cJSON *claim, const char *reason, bool reset_retries, char *detail,
    size_t n)
{
	struct dlq_pub_pending e;

	if (dlq_replay_post(c, pub, claim, reason, reset_retries, &e) == 0)
		dlq_publisher_settle(pub, &e, 1, DLQ_REPLAY_KEY_HEADER);
	snprintf(detail, n, "%s", e.detail);
	return e.out;
}

void
dlq_replay_verdict(cJSON *results, const cJSON *claim, enum dlq_pub_outcome o,
    const char *detail)
{
	cJSON *one = cJSON_CreateObject();

	cJSON_AddNumberToObject(one, "attempt",
	    cJSON_GetObjectItem(claim, "attempt")->valuedouble);
	cJSON_AddStringToObject(one, "outcome", dlq_pub_outcome_name(o));
	cJSON_AddStringToObject(one, "detail", detail);
	cJSON_AddItemToArray(results, one);
}

/* Bytes `item` adds to an array in cJSON's unformatted print. */
static size_t
printed_len(const cJSON *item)
{
	char *text = cJSON_PrintUnformatted(item);
	size_t n = text ? strlen(text) : 0;

	cJSON_free(text);
	return n;
}

cJSON *
dlq_replay_finish_split(cJSON *fin, size_t max)
{
	cJSON *out = cJSON_CreateArray(), *ids, *res, *r, *id, *cur = NULL;
	size_t base, used = 0, len;

	ids = cJSON_DetachItemFromObject(fin, "ids");
	res = cJSON_DetachItemFromObject(fin, "results");
	/* the rest of the request, and its two arrays when empty */
	base = printed_len(fin) + strlen(",\"ids\":[],\"results\":[]");
	while (res != NULL && (r = res->child) != NULL) {
		r = cJSON_DetachItemViaPointer(res, r);
		id = ids != NULL && ids->child != NULL ?
		    cJSON_DetachItemViaPointer(ids, ids->child) : NULL;
		len = printed_len(r) + 1 + (id ? printed_len(id) + 1 : 0);
		if (cur == NULL || used + len > max) {
			cur = cJSON_Duplicate(fin, 1);
			cJSON_AddArrayToObject(cur, "ids");
			cJSON_AddArrayToObject(cur, "results");
			cJSON_AddItemToArray(out, cur);
			used = base;
		}
		if (id != NULL)
			cJSON_AddItemToArray(cJSON_GetObjectItem(cur, "ids"), id);
		cJSON_AddItemToArray(cJSON_GetObjectItem(cur, "results"), r);
		used += len;
	}
	cJSON_Delete(ids);
	cJSON_Delete(res);
	return out;
}
