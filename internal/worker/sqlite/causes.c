/* causes.c - failure signature groups gathered by cause (causes.h).
 *
 * The groups come from the archive the largest first; each is added to
 * its cause, found by the hash the digest gives it (digest.c), in a table
 * of open addressing. A cause's first group is its largest: its texts and
 * sample are the cause's. The causes are then sorted by their sums, and
 * only those shown have their texts read, by their samples' ids.
 *
 * An archive may hold 50 000 signatures: what is kept of each is a few
 * numbers, in three arrays that grow by doubling (large blocks, mapped on
 * their own and returned to the system when freed), not a string of its
 * own (small blocks, whose pages the heap keeps). */
#include "causes.h"
#include "sqlite.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "archive.h"
#include "buf.h"
#include "cases.h"
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

struct causes {
	struct cause	*v;
	size_t		 n, cap;
	struct member	*m;
	size_t		 n_m, cap_m;
	uint32_t	*slots;		/* an index into v + 1; 0: free */
	size_t		 n_slots;	/* a power of two */
	struct dlq_buf	 norm;		/* a group's normalised error text */
	struct dlq_buf	 text;		/* a text of a sample, made whole */
};

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
rehash(struct causes *c)
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
find(struct causes *c, uint64_t hash)
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

/* Adds the group of the statement's row to its cause. */
static bool
add_group(struct causes *c, sqlite3_stmt *st, const char *queue)
{
	const char *error = dlq_sqlite_text(st, DLQ_GROUP_ERROR);
	int64_t first = sqlite3_column_int64(st, DLQ_GROUP_FIRST_SEEN);
	int64_t last = sqlite3_column_int64(st, DLQ_GROUP_LAST_SEEN);
	struct cause *k;
	struct member *m;

	dlq_buf_reset(&c->norm);
	dlq_signature_normalize(error, strlen(error), &c->norm);
	if (c->norm.oom || (m = room(c->m, &c->cap_m, c->n_m,
	    sizeof(*m))) == NULL)
		return false;
	c->m = m;
	if ((k = find(c, dlq_signature_cause(dlq_sqlite_text(st,
	    DLQ_GROUP_REASON), dlq_sqlite_text(st, DLQ_GROUP_CLASS),
	    c->norm.data != NULL ? c->norm.data : ""))) == NULL)
		return false;
	m = &c->m[c->n_m++];
	snprintf(m->signature, sizeof(m->signature), "%s",
	    dlq_sqlite_text(st, DLQ_GROUP_SIGNATURE));
	m->next = 0;
	m->count = sqlite3_column_int64(st, DLQ_GROUP_COUNT);
	m->unresolved = sqlite3_column_int64(st, DLQ_GROUP_UNRESOLVED);
	m->sample_id = sqlite3_column_int64(st, DLQ_GROUP_SAMPLE_ID);
	if (k->head == 0) {
		k->head = (uint32_t)c->n_m;
		k->first_seen = first;
		k->last_seen = last;
	} else
		c->m[k->tail - 1].next = (uint32_t)c->n_m;
	k->tail = (uint32_t)c->n_m;
	k->count += m->count;
	k->unresolved += m->unresolved;
	if (first < k->first_seen)
		k->first_seen = first;
	if (last > k->last_seen)
		k->last_seen = last;
	if (queue == NULL ||
	    strcmp(queue, dlq_sqlite_text(st, DLQ_GROUP_QUEUE)) == 0 ||
	    strcmp(queue, dlq_sqlite_text(st, DLQ_GROUP_DLQ)) == 0)
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

/* Appends column `col` of the sample's row as a JSON string that a C
 * string holds whole (a NUL as U+FFFD, as the other answers have it);
 * null when NULL or when there is no row. */
static void
add_column(struct dlq_buf *out, struct causes *c, sqlite3_stmt *sample,
    bool found, int col)
{
	if (!found || sqlite3_column_type(sample, col) == SQLITE_NULL) {
		dlq_buf_adds(out, "null");
		return;
	}
	dlq_buf_reset(&c->text);
	dlq_buf_add_text(&c->text, sqlite3_column_text(sample, col),
	    (size_t)sqlite3_column_bytes(sample, col));
	dlq_buf_json_str(out, c->text.data != NULL ? c->text.data : "",
	    c->text.len);
}

/* Reads the row of archive id `id` into `sample`; false when none. */
static bool
read_sample(sqlite3_stmt *sample, int64_t id)
{
	sqlite3_reset(sample);
	sqlite3_bind_int64(sample, 1, id);
	return sqlite3_step(sample) == SQLITE_ROW;
}

enum { S_QUEUE, S_REASON, S_CLASS, S_ERROR, S_MESSAGE_ID };

static void
add_cause_json(struct dlq_buf *out, struct causes *c, const struct cause *k,
    sqlite3_stmt *sample)
{
	const struct member *m = &c->m[k->head - 1];
	bool found = read_sample(sample, m->sample_id);

	dlq_buf_adds(out, "{\"reason\":");
	add_column(out, c, sample, found, S_REASON);
	dlq_buf_json_key(out, "class");
	add_column(out, c, sample, found, S_CLASS);
	dlq_buf_json_key(out, "error");
	add_column(out, c, sample, found, S_ERROR);
	dlq_buf_printf(out, ",\"count\":%lld,\"unresolved\":%lld,"
	    "\"first_seen\":%lld,\"last_seen\":%lld,\"sample_id\":%lld,"
	    "\"sample_message_id\":", (long long)k->count,
	    (long long)k->unresolved, (long long)k->first_seen,
	    (long long)k->last_seen, (long long)m->sample_id);
	add_column(out, c, sample, found, S_MESSAGE_ID);
	dlq_buf_adds(out, ",\"groups\":[");
	for (; m != NULL; m = m->next ? &c->m[m->next - 1] : NULL) {
		if (m != &c->m[k->head - 1])	/* the cause's: read */
			found = read_sample(sample, m->sample_id);
		dlq_buf_adds(out, "{\"queue\":");
		add_column(out, c, sample, found, S_QUEUE);
		dlq_buf_json_key(out, "signature");
		dlq_buf_json_cstr(out, m->signature);
		dlq_buf_printf(out, ",\"count\":%lld,\"unresolved\":%lld}%s",
		    (long long)m->count, (long long)m->unresolved,
		    m->next ? "," : "");
	}
	dlq_buf_adds(out, "]}");
}

/* Appends the chosen causes, the largest `limit`, as JSON. */
static bool
add_json(struct causes *c, sqlite3_stmt *sample, int64_t limit,
    struct dlq_buf *out)
{
	struct cause **order = malloc((c->n ? c->n : 1) * sizeof(*order));
	size_t i, n = 0;

	if (order == NULL)
		return false;
	for (i = 0; i < c->n; i++)
		if (c->v[i].chosen)
			order[n++] = &c->v[i];
	qsort(order, n, sizeof(*order), by_count);
	dlq_buf_addc(out, '[');
	for (i = 0; i < n && (int64_t)i < limit; i++) {
		if (i > 0)
			dlq_buf_addc(out, ',');
		add_cause_json(out, c, order[i], sample);
	}
	dlq_buf_addc(out, ']');
	free(order);
	return true;
}

int
dlq_sqlite_causes_list(struct dlq_sqlite *archive, const char *queue, const char *class,
    int64_t since_ms, int64_t limit, size_t max_groups, struct dlq_buf *out)
{
	sqlite3 *db = dlq_sqlite_db(archive);
	struct causes c;
	sqlite3_stmt *st = dlq_cases_group_rows(db, since_ms), *sample = NULL;
	int rc = SQLITE_ERROR;
	bool ok = true, too_many = false;

	if (st != NULL && sqlite3_prepare_v2(db, "SELECT queue, reason, class,"
	    " dlq_mask(error), message_id FROM dead_letters WHERE id = ?1",
	    -1, &sample, NULL) == SQLITE_OK) {
		memset(&c, 0, sizeof(c));
		dlq_buf_init(&c.norm);
		dlq_buf_init(&c.text);
		while (ok && !too_many && (rc = sqlite3_step(st)) ==
		    SQLITE_ROW)
			if (class == NULL || strcmp(class, dlq_sqlite_text(st,
			    DLQ_GROUP_CLASS)) == 0) {
				too_many = c.n_m == max_groups;
				ok = too_many || add_group(&c, st, queue);
			}
		if (ok && rc == SQLITE_DONE)
			ok = add_json(&c, sample, limit, out) && !out->oom;
		free(c.v);
		free(c.m);
		free(c.slots);
		dlq_buf_release(&c.norm);
		dlq_buf_release(&c.text);
	}
	if (too_many) {
		dlq_buf_reset(out);
		dlq_buf_printf(out, "more than %zu failure signatures %s: too "
		    "many to gather by cause at once; narrow it with --since "
		    "DUR or --class C", max_groups, since_ms ? "in the window" :
		    "in the archive");
	} else if (rc == SQLITE_ROW || (rc == SQLITE_DONE && !ok)) {
		dlq_buf_reset(out);
		dlq_buf_adds(out, "out of memory");
	} else if (rc != SQLITE_DONE) {
		dlq_buf_reset(out);
		dlq_buf_adds(out, dlq_sqlite_db_errmsg(db));
	}
	sqlite3_finalize(sample);
	sqlite3_finalize(st);
	if (too_many)
		return DLQ_REFUSED;
	return rc == SQLITE_DONE && ok ? DLQ_OK : DLQ_ERROR;
}
