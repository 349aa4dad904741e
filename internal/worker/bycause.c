/* bycause.c - signature groups gathered by cause (bycause.h).
 *
 * Each group is added to its cause, found by the hash the digest gives
 * it (dlq_signature_cause), in a table of open addressing. The groups
 * come the largest first, so a cause's first group is its largest: its
 * texts and sample are the cause's. The causes are then sorted by their
 * sums, and only those shown have their texts read, by their samples'
 * ids. */
#include "bycause.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "signature.h"

/* The group of one signature. */
struct member {
	char		 signature[DLQ_SIGNATURE_ID_LEN + 1];
	uint32_t	 next;		/* its cause's next group + 1; 0: last */
	int64_t		 count, unresolved, sample_id;
};

struct cause {
	uint64_t	 hash;
	int64_t		 count, unresolved, first_seen, last_seen;
	uint32_t	 head, tail;	/* its groups: a member's index + 1 */
	bool		 chosen;	/* a group of the queue asked */
};

struct dlq_bycause {
	const char	*queue;		/* NULL: all */
	struct cause	*v;
	size_t		 n, cap;
	struct member	*m;
	size_t		 n_m, cap_m;
	uint32_t	*slots;		/* an index into v + 1; 0: free */
	size_t		 n_slots;	/* a power of two */
	struct dlq_buf	 norm;		/* a group's normalised error text */
	struct dlq_buf	 text;		/* a text of a sample, made whole */
};

struct dlq_bycause *
dlq_bycause_new(const char *queue)
{
	struct dlq_bycause *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->queue = queue;
	dlq_buf_init(&c->norm);
	dlq_buf_init(&c->text);
	return c;
}

void
dlq_bycause_free(struct dlq_bycause *c)
{
	if (c == NULL)
		return;
	free(c->v);
	free(c->m);
	free(c->slots);
	dlq_buf_release(&c->norm);
	dlq_buf_release(&c->text);
	free(c);
}

size_t
dlq_bycause_groups(const struct dlq_bycause *c)
{
	return c->n_m;
}

/* Room for one more in the array `p` of *cap elements of `size`, `n` of
 * them used: p, or where it moved; NULL when out of memory (p stays). */
static void *
room(void *p, size_t *cap, size_t n, size_t size)
{
	size_t want = *cap ? *cap * 2 : 64;

	if (n < *cap)
		return p;
	if (want > UINT32_MAX - 1 || (p = realloc(p, want * size)) == NULL)
		return NULL;
	*cap = want;
	return p;
}

static bool
rehash(struct dlq_bycause *c)
{
	size_t n = c->n_slots ? c->n_slots * 2 : 128, i, k;
	uint32_t *slots = calloc(n, sizeof(*slots));

	if (slots == NULL)
		return false;
	for (i = 0; i < c->n; i++) {
		for (k = c->v[i].hash & (n - 1); slots[k] != 0;
		    k = (k + 1) & (n - 1))
			;
		slots[k] = (uint32_t)i + 1;
	}
	free(c->slots);
	c->slots = slots;
	c->n_slots = n;
	return true;
}

/* The cause of `hash`, added (zeroed) when new; NULL when out of memory. */
static struct cause *
find(struct dlq_bycause *c, uint64_t hash)
{
	struct cause *v;
	size_t k;

	if ((c->n + 1) * 2 > c->n_slots && !rehash(c))
		return NULL;
	for (k = hash & (c->n_slots - 1); c->slots[k] != 0;
	    k = (k + 1) & (c->n_slots - 1))
		if (c->v[c->slots[k] - 1].hash == hash)
			return &c->v[c->slots[k] - 1];
	if ((v = room(c->v, &c->cap, c->n, sizeof(*v))) == NULL)
		return NULL;
	c->v = v;
	memset(&c->v[c->n], 0, sizeof(c->v[c->n]));
	c->v[c->n].hash = hash;
	c->slots[k] = (uint32_t)++c->n;
	return &c->v[c->n - 1];
}

bool
dlq_bycause_add(struct dlq_bycause *c, const struct dlq_bycause_group *g)
{
	struct cause *k;
	struct member *m;

	dlq_buf_reset(&c->norm);
	dlq_signature_normalize(g->error, strlen(g->error), &c->norm);
	if (c->norm.oom || (m = room(c->m, &c->cap_m, c->n_m,
	    sizeof(*m))) == NULL)
		return false;
	c->m = m;
	if ((k = find(c, dlq_signature_cause(g->reason, g->class,
	    c->norm.data != NULL ? c->norm.data : ""))) == NULL)
		return false;
	m = &c->m[c->n_m++];
	snprintf(m->signature, sizeof(m->signature), "%s", g->signature);
	m->next = 0;
	m->count = g->count;
	m->unresolved = g->unresolved;
	m->sample_id = g->sample_id;
	if (k->head == 0) {
		k->head = (uint32_t)c->n_m;
		k->first_seen = g->first_seen;
		k->last_seen = g->last_seen;
	} else
		c->m[k->tail - 1].next = (uint32_t)c->n_m;
	k->tail = (uint32_t)c->n_m;
	k->count += m->count;
	k->unresolved += m->unresolved;
	if (g->first_seen < k->first_seen)
		k->first_seen = g->first_seen;
	if (g->last_seen > k->last_seen)
		k->last_seen = g->last_seen;
	if (c->queue == NULL || strcmp(c->queue, g->queue) == 0 ||
	    strcmp(c->queue, g->dlq) == 0)
		k->chosen = true;
	return true;
}

/* The largest first; of two as large, the one whose largest group came
 * first. */
static int
by_count(const void *a, const void *b)
{
	const struct cause *x = *(const struct cause *const *)a;
	const struct cause *y = *(const struct cause *const *)b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->head < y->head ? -1 : x->head > y->head;
}

/* Appends text `i` of the sample as a JSON string that a C string holds
 * whole (a NUL as U+FFFD, as the other answers have it); null when NULL
 * or when there is no record. */
static void
add_text(struct dlq_buf *out, struct dlq_bycause *c,
    const struct dlq_bycause_sample *s, int i)
{
	if (!s->found || s->text[i] == NULL) {
		dlq_buf_adds(out, "null");
		return;
	}
	dlq_buf_reset(&c->text);
	dlq_buf_add_text(&c->text, s->text[i], s->len[i]);
	dlq_buf_json_str(out, c->text.data != NULL ? c->text.data : "",
	    c->text.len);
}

static bool
add_cause_json(struct dlq_buf *out, struct dlq_bycause *c,
    const struct cause *k, dlq_bycause_read read, void *arg)
{
	const struct member *m = &c->m[k->head - 1];
	struct dlq_bycause_sample s;

	if (!read(arg, m->sample_id, &s))
		return false;
	dlq_buf_adds(out, "{\"reason\":");
	add_text(out, c, &s, DLQ_BYCAUSE_REASON);
	dlq_buf_json_key(out, "class");
	add_text(out, c, &s, DLQ_BYCAUSE_CLASS);
	dlq_buf_json_key(out, "error");
	add_text(out, c, &s, DLQ_BYCAUSE_ERROR);
	dlq_buf_printf(out, ",\"count\":%lld,\"unresolved\":%lld,"
	    "\"first_seen\":%lld,\"last_seen\":%lld,\"sample_id\":%lld,"
	    "\"sample_message_id\":", (long long)k->count,
	    (long long)k->unresolved, (long long)k->first_seen,
	    (long long)k->last_seen, (long long)m->sample_id);
	add_text(out, c, &s, DLQ_BYCAUSE_MESSAGE_ID);
	dlq_buf_adds(out, ",\"groups\":[");
	for (; m != NULL; m = m->next ? &c->m[m->next - 1] : NULL) {
		/* the cause's own sample is read already */
		if (m != &c->m[k->head - 1] && !read(arg, m->sample_id, &s))
			return false;
		dlq_buf_adds(out, "{\"queue\":");
		add_text(out, c, &s, DLQ_BYCAUSE_QUEUE);
		dlq_buf_json_key(out, "signature");
		dlq_buf_json_cstr(out, m->signature);
		dlq_buf_printf(out, ",\"count\":%lld,\"unresolved\":%lld}%s",
		    (long long)m->count, (long long)m->unresolved,
		    m->next ? "," : "");
	}
	dlq_buf_adds(out, "]}");
	return true;
}

int
dlq_bycause_json(struct dlq_bycause *c, int64_t limit, dlq_bycause_read read,
    void *arg, struct dlq_buf *out)
{
	struct cause **order = malloc((c->n ? c->n : 1) * sizeof(*order));
	size_t i, n = 0;
	bool ok = true;

	if (order == NULL) {
		dlq_buf_reset(out);
		dlq_buf_adds(out, "out of memory");
		return DLQ_ERROR;
	}
	for (i = 0; i < c->n; i++)
		if (c->v[i].chosen)
			order[n++] = &c->v[i];
	qsort(order, n, sizeof(*order), by_count);
	dlq_buf_addc(out, '[');
	for (i = 0; ok && i < n && (int64_t)i < limit; i++) {
		if (i > 0)
			dlq_buf_addc(out, ',');
		ok = add_cause_json(out, c, order[i], read, arg);
	}
	dlq_buf_addc(out, ']');
	free(order);
	if (ok && !out->oom)
		return DLQ_OK;
	dlq_buf_reset(out);
	dlq_buf_adds(out, ok ? "out of memory" : "archive: a sample could "
	    "not be read");
	return DLQ_ERROR;
}

int
dlq_bycause_too_many(size_t max_groups, int64_t since_ms,
    struct dlq_buf *out)
{
	dlq_buf_reset(out);
	dlq_buf_printf(out, "more than %zu failure signatures %s: too many to "
	    "gather by cause at once; narrow it with --since DUR or --class C",
	    max_groups, since_ms ? "in the window" : "in the archive");
	return DLQ_REFUSED;
}
