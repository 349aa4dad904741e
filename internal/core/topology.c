/* topology.c - load the topology file and assert it on the broker.
 *
 * Conflicts are found by declaring, not by inspecting: the broker refuses a
 * declare whose arguments differ from the live queue with 406
 * PRECONDITION_FAILED and closes the channel, naming the argument and both
 * values. We report that, reopen the channel and go on, so one conflicting
 * queue never stops the other 36 from being asserted, and nothing that
 * holds messages is ever deleted. */
#include "topology.h"

#include <libconfig.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amqp.h"
#include "confint.h"
#include "log.h"
#include "mgmt.h"
#include "suggest.h"
#include "termtext.h"

#define QUEUE_NAME_MAX	255

static const char *const top_keys[] = { "work_exchange",
	"dead_letter_exchange", "dlq_suffix", "defaults", "queues", NULL };
static const char *const queue_keys[] = { "name", "type", "retry_delay_ms",
	"max_retries", "delivery_limit", "dead_letter_strategy", "monitored",
	NULL };

struct loader {
	const char	*path;
	struct dlq_buf	*errors;
	int		 rc;
};

static void
err(struct loader *l, const config_setting_t *s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
err(struct loader *l, const config_setting_t *s, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	dlq_buf_printf(l->errors, "%s:%u: %s\n", l->path,
	    s ? (unsigned)config_setting_source_line(s) : 0, msg);
	l->rc = -1;
}

static bool
in_list(const char *const *list, const char *s)
{
	for (; *list != NULL; list++)
		if (strcmp(*list, s) == 0)
			return true;
	return false;
}

static void
check_keys(struct loader *l, const config_setting_t *g,
    const char *const *allowed, const char *what)
{
	const config_setting_t *s;
	const char *name, *near;
	unsigned i;

	for (i = 0; (s = config_setting_get_elem(g, i)) != NULL; i++) {
		if ((name = config_setting_name(s)) == NULL ||
		    in_list(allowed, name))
			continue;
		near = dlq_suggest(name, allowed);
		err(l, s, "unknown setting '%s' in %s%s%s%s", name, what,
		    near != NULL ? " (did you mean '" : "", near != NULL ?
		    near : "", near != NULL ? "'?)" : "");
	}
}

static char *
get_str(struct loader *l, const config_setting_t *g, const char *key,
    const char *def)
{
	const config_setting_t *s = config_setting_get_member(g, key);

	if (s == NULL)
		return def ? strdup(def) : NULL;
	if (config_setting_type(s) != CONFIG_TYPE_STRING) {
		err(l, s, "'%s' must be a string", key);
		return def ? strdup(def) : NULL;
	}
	return strdup(config_setting_get_string(s));
}

static int64_t
get_int(struct loader *l, const config_setting_t *g, const char *key,
    int64_t def, int64_t min, int64_t max)
{
	const config_setting_t *s = config_setting_get_member(g, key);
	char text[64];
	int64_t v;

	if (s == NULL)
		return def;
	if (config_setting_type(s) != CONFIG_TYPE_INT &&
	    config_setting_type(s) != CONFIG_TYPE_INT64) {
		err(l, s, "'%s' must be an integer%s", key,
		    dlq_confint_in_ms(key) ? " (a number of milliseconds: "
		    "10000 for 10 seconds)" : "");
		return def;
	}
	if (!dlq_confint_get(s, l->path, &v, text, sizeof(text)) || v < min ||
	    v > max) {
		err(l, s, "'%s' = %s is out of range %lld..%lld", key, text,
		    (long long)min, (long long)max);
		return def;
	}
	return v;
}

static bool
get_bool(struct loader *l, const config_setting_t *g, const char *key,
    bool def)
{
	const config_setting_t *s = config_setting_get_member(g, key);

	if (s == NULL)
		return def;
	if (config_setting_type(s) != CONFIG_TYPE_BOOL) {
		err(l, s, "'%s' must be true or false", key);
		return def;
	}
	return config_setting_get_bool(s);
}

/* Which of two words `key` says: 0 or 1; `def` when it is not set. */
static int
get_choice(struct loader *l, const config_setting_t *g, const char *key,
    const char *zero, const char *one, int def)
{
	const config_setting_t *s = config_setting_get_member(g, key);
	const char *v;

	if (s == NULL)
		return def;
	v = config_setting_type(s) == CONFIG_TYPE_STRING ?
	    config_setting_get_string(s) : "";
	if (strcmp(v, zero) == 0)
		return 0;
	if (strcmp(v, one) == 0)
		return 1;
	err(l, s, "'%s' must be \"%s\" or \"%s\"", key, zero, one);
	return def;
}

static enum dlq_queue_type
get_type(struct loader *l, const config_setting_t *g, enum dlq_queue_type def)
{
	return get_choice(l, g, "type", "classic", "quorum",
	    def == DLQ_QUEUE_QUORUM) ? DLQ_QUEUE_QUORUM : DLQ_QUEUE_CLASSIC;
}

/* "at-most-once" (the broker's default) or "at-least-once": true for the
 * latter. */
static bool
get_strategy(struct loader *l, const config_setting_t *g, bool def)
{
	return get_choice(l, g, "dead_letter_strategy", "at-most-once",
	    "at-least-once", def) == 1;
}

/* Whether `name` (of `what`: "queue", "work_exchange", ...) can be a
 * name in RabbitMQ, with `suffix` added (a queue's DLQ suffix, or ""):
 * if not, says why at `at`, the name shown escaped and cut short. */
static bool
check_name(struct loader *l, const config_setting_t *at, const char *what,
    const char *name, const char *suffix)
{
	size_t n = strlen(name), cut = dlq_utf8_prefix(name, n < 60 ? n : 60);
	char prefix[61];
	struct dlq_buf shown;
	bool ok = false;

	memcpy(prefix, name, cut);
	prefix[cut] = '\0';
	dlq_buf_init(&shown);
	dlq_buf_adds(&shown, "");	/* data set, even for "" */
	dlq_term_add(&shown, prefix);
	if (cut < n)
		dlq_buf_adds(&shown, "…");
	if (n == 0)
		err(l, at, "%s: the name is empty", what);
	else if (dlq_term_has_control(name, false))
		err(l, at, "%s '%s': a name must not hold control characters",
		    what, shown.data);
	else if (n + strlen(suffix) > QUEUE_NAME_MAX && *suffix != '\0')
		err(l, at, "%s '%s' is %zu bytes: with the DLQ suffix '%s' "
		    "its DLQ's name would be %zu, and AMQP allows %d", what,
		    shown.data, n, suffix, n + strlen(suffix), QUEUE_NAME_MAX);
	else if (n > QUEUE_NAME_MAX)
		err(l, at, "%s '%s' is %zu bytes, and AMQP allows %d", what,
		    shown.data, n, QUEUE_NAME_MAX);
	else
		ok = true;
	dlq_buf_release(&shown);
	return ok;
}

static char *
concat(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);
	char *r = malloc(na + nb + 1);

	if (r != NULL) {
		memcpy(r, a, na);
		memcpy(r + na, b, nb + 1);
	}
	return r;
}

/* RabbitMQ refuses to declare a queue or a new exchange named amq.*;
 * of its predeclared exchanges, only amq.direct is what the topology
 * declares (direct, durable). */
static bool
reserved(const char *name)
{
	return strncmp(name, "amq.", 4) == 0;
}

static bool
reserved_exchange(const char *name)
{
	return reserved(name) && strcmp(name, "amq.direct") != 0;
}

/* The names a work queue brings: itself, its DLQ, its retry queue. */
static const char *
queue_name(const struct dlq_queue *q, int k, const char **what)
{
	static const char *const whats[] = { "the work queue", "the DLQ of",
		"the retry queue of" };

	*what = whats[k];
	return k == 0 ? q->name : k == 1 ? q->dlq_name : q->retry_name;
}

/* Refuses a queue whose names meet the names of one listed before it:
 * one queue declared for two roles would conflict with itself. */
static void
check_names(struct loader *l, const struct dlq_topology *t,
    const struct dlq_queue *q, const config_setting_t *ns)
{
	const char *a, *b, *wa, *wb;
	size_t i;
	int j, k;

	if (q->retry_name != NULL && strcmp(q->retry_name, q->dlq_name) == 0) {
		err(l, ns, "queue '%s': its DLQ and its retry queue would both be "
		    "'%s' (dlq_suffix)", q->name, q->dlq_name);
		return;
	}
	for (i = 0; i < t->n_queues; i++)
		for (j = 0; j < 3; j++)
			for (k = 0; k < 3; k++) {
				a = queue_name(q, j, &wa);
				b = queue_name(&t->queues[i], k, &wb);
				if (a != NULL && b != NULL && strcmp(a, b) == 0) {
					err(l, ns, "'%s' would be both %s '%s' "
					    "and %s '%s'", a, wb,
					    t->queues[i].name, wa, q->name);
					return;
				}
			}
}

static void
load_queue(struct loader *l, struct dlq_topology *t, struct dlq_queue *def,
    const config_setting_t *qs)
{
	struct dlq_queue *q = &t->queues[t->n_queues];
	const config_setting_t *ns;
	size_t i;

	if (config_setting_type(qs) != CONFIG_TYPE_GROUP) {
		err(l, qs, "each queue must be a group { name = \"...\"; }");
		return;
	}
	check_keys(l, qs, queue_keys, "a queue");
	ns = config_setting_get_member(qs, "name");
	q->name = get_str(l, qs, "name", NULL);
	if (q->name == NULL) {		/* or not a string: said so */
		if (ns == NULL)
			err(l, qs, "a queue needs a name: { name = \"...\"; }");
		return;
	}
	if (!check_name(l, ns, "queue", q->name, t->dlq_suffix)) {
		free(q->name);
		q->name = NULL;
		return;
	}
	if (reserved(q->name)) {
		err(l, ns, "queue '%s': names beginning with 'amq.' are reserved "
		    "by RabbitMQ", q->name);
		free(q->name);
		q->name = NULL;
		return;
	}
	for (i = 0; i < t->n_queues; i++)
		if (strcmp(t->queues[i].name, q->name) == 0) {
			err(l, ns, "queue '%s' is listed twice", q->name);
			free(q->name);
			q->name = NULL;
			return;
		}
	q->type = get_type(l, qs, def->type);
	q->retry_delay_ms = get_int(l, qs, "retry_delay_ms", def->retry_delay_ms,
	    0, INT32_MAX);
	q->max_retries = get_int(l, qs, "max_retries", def->max_retries, 0,
	    1000000);
	q->delivery_limit = get_int(l, qs, "delivery_limit", def->delivery_limit,
	    0, INT32_MAX);
	q->at_least_once = get_strategy(l, qs, def->at_least_once);
	q->monitored = get_bool(l, qs, "monitored", def->monitored);
	if (q->delivery_limit > 0 && q->type != DLQ_QUEUE_QUORUM)
		err(l, qs, "queue '%s': delivery_limit needs type = \"quorum\"",
		    q->name);
	if (q->at_least_once && q->type != DLQ_QUEUE_QUORUM)
		err(l, qs, "queue '%s': dead_letter_strategy = "
		    "\"at-least-once\" needs type = \"quorum\" (RabbitMQ "
		    "dead-letters at least once only from quorum queues)",
		    q->name);
	q->dlq_name = concat(q->name, t->dlq_suffix);
	if (q->retry_delay_ms > 0)
		q->retry_name = concat(q->name, ".retry");
	if (q->retry_name != NULL && strlen(q->retry_name) > QUEUE_NAME_MAX)
		err(l, ns, "queue '%s': its retry queue's name would be longer "
		    "than %d bytes", q->name, QUEUE_NAME_MAX);
	check_names(l, t, q, ns);
	t->n_queues++;
}

/* The line that sets `key` in group g, or g's when it is not set. */
static const config_setting_t *
at(const config_setting_t *g, const char *key)
{
	const config_setting_t *s = config_setting_get_member(g, key);

	return s != NULL ? s : g;
}

/* The two exchanges: names RabbitMQ takes, not its own, not the same;
 * errors of both at their lines, of the pair at `xs`. */
static void
check_exchanges(struct loader *l, const struct dlq_topology *t,
    const config_setting_t *root, const config_setting_t *xs)
{
	bool ok;

	if (t->work_exchange == NULL || t->dead_letter_exchange == NULL) {
		err(l, root, "out of memory");
		return;
	}
	ok = check_name(l, at(root, "work_exchange"), "work_exchange",
	    t->work_exchange, "");
	if (!check_name(l, at(root, "dead_letter_exchange"),
	    "dead_letter_exchange", t->dead_letter_exchange, "") || !ok)
		return;
	if (reserved_exchange(t->work_exchange) ||
	    reserved_exchange(t->dead_letter_exchange))
		err(l, xs, "exchange names beginning with 'amq.' are reserved "
		    "by RabbitMQ; of its own exchanges only amq.direct is direct "
		    "(work_exchange '%s', dead_letter_exchange '%s')",
		    t->work_exchange, t->dead_letter_exchange);
	else if (strcmp(t->work_exchange, t->dead_letter_exchange) == 0)
		err(l, xs, "dead_letter_exchange must not be work_exchange "
		    "('%s'): a message published to Q would reach Q's DLQ too, "
		    "and a dead letter would go back to Q", t->work_exchange);
}

static void
load_root(struct loader *l, struct dlq_topology *t, const config_t *cf,
    const char *suffix)
{
	const config_setting_t *root = config_root_setting(cf), *qs, *ds, *xs;
	struct dlq_queue def = { 0 };
	unsigned i, n;

	check_keys(l, root, top_keys, "the topology");
	/* what exchange errors point at: the line that names one */
	if ((xs = config_setting_get_member(root, "dead_letter_exchange")) ==
	    NULL && (xs = config_setting_get_member(root, "work_exchange")) ==
	    NULL)
		xs = root;
	t->work_exchange = get_str(l, root, "work_exchange", "line_exchange");
	t->dead_letter_exchange = get_str(l, root, "dead_letter_exchange",
	    "line_exchange_dlq");
	t->dlq_suffix = suffix ? strdup(suffix) :
	    get_str(l, root, "dlq_suffix", ".dlq");
	check_exchanges(l, t, root, xs);
	if (t->dlq_suffix == NULL || *t->dlq_suffix == '\0')
		err(l, root, "dlq_suffix must not be empty");

	def.type = DLQ_QUEUE_CLASSIC;
	def.max_retries = 3;
	def.monitored = true;
	if ((ds = config_setting_get_member(root, "defaults")) != NULL) {
		if (config_setting_type(ds) != CONFIG_TYPE_GROUP)
			err(l, ds, "'defaults' must be a group");
		else {
			check_keys(l, ds, queue_keys, "defaults");
			def.type = get_type(l, ds, def.type);
			def.retry_delay_ms = get_int(l, ds, "retry_delay_ms", 0,
			    0, INT32_MAX);
			def.max_retries = get_int(l, ds, "max_retries", 3, 0,
			    1000000);
			def.delivery_limit = get_int(l, ds, "delivery_limit", 0,
			    0, INT32_MAX);
			def.at_least_once = get_strategy(l, ds, false);
			def.monitored = get_bool(l, ds, "monitored", true);
		}
	}
	qs = config_setting_get_member(root, "queues");
	if (qs == NULL || (config_setting_type(qs) != CONFIG_TYPE_LIST &&
	    config_setting_type(qs) != CONFIG_TYPE_ARRAY)) {
		err(l, qs ? qs : root, "'queues' must be a list ( { name = ...; }, ... )");
		return;
	}
	if (t->dlq_suffix == NULL)
		return;
	n = (unsigned)config_setting_length(qs);
	if ((t->queues = calloc(n ? n : 1, sizeof(*t->queues))) == NULL) {
		err(l, qs, "out of memory");
		return;
	}
	for (i = 0; i < n; i++)
		load_queue(l, t, &def, config_setting_get_elem(qs, i));
	if (n == 0)
		err(l, qs, "no queues listed");
}

struct dlq_topology *
dlq_topology_load(const char *path, const char *suffix, struct dlq_buf *errors)
{
	struct loader l = { path ? path : "(embedded topology)", errors, 0 };
	struct dlq_topology *t;
	config_t cf;
	FILE *fp = NULL;
	int ok;

	if ((t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	t->source = strdup(l.path);
	config_init(&cf);
	if (path != NULL) {
		if ((fp = dlq_config_fopen(path, errors)) == NULL) {
			l.rc = -1;
			goto out;
		}
		ok = config_read(&cf, fp);
	} else
		ok = config_read_string(&cf, dlq_topology_default_text);
	if (ok != CONFIG_TRUE) {
		dlq_config_say_unread(&cf, l.path, errors);
		l.rc = -1;
		goto out;
	}
	load_root(&l, t, &cf, suffix);
out:
	config_destroy(&cf);
	if (fp != NULL)
		fclose(fp);
	if (l.rc == -1) {
		dlq_topology_free(t);
		return NULL;
	}
	return t;
}

void
dlq_topology_free(struct dlq_topology *t)
{
	size_t i;

	if (t == NULL)
		return;
	for (i = 0; i < t->n_queues; i++) {
		free(t->queues[i].name);
		free(t->queues[i].dlq_name);
		free(t->queues[i].retry_name);
	}
	free(t->queues);
	free(t->source);
	free(t->work_exchange);
	free(t->dead_letter_exchange);
	free(t->dlq_suffix);
	free(t);
}

const struct dlq_queue *
dlq_topology_find(const struct dlq_topology *t, const char *name)
{
	size_t i;

	for (i = 0; i < t->n_queues; i++)
		if (strcmp(t->queues[i].name, name) == 0 ||
		    strcmp(t->queues[i].dlq_name, name) == 0)
			return &t->queues[i];
	return NULL;
}

const char *
dlq_topology_suggest(const struct dlq_topology *t, const char *name)
{
	struct dlq_suggestion s = DLQ_SUGGESTION_NONE;
	const struct dlq_queue *q;

	for (q = t->queues; q < t->queues + t->n_queues; q++) {
		dlq_suggest_consider(&s, name, q->name, strlen(q->name));
		dlq_suggest_consider(&s, name, q->dlq_name, strlen(q->dlq_name));
	}
	return s.word;
}

size_t
dlq_topology_monitored(const struct dlq_topology *t)
{
	size_t i, n = 0;

	for (i = 0; i < t->n_queues; i++)
		if (t->queues[i].monitored)
			n++;
	return n;
}

/* Copies the text between `start` and `end` markers (exclusive). */
static bool
between(const char *text, const char *start, const char *end, char *out,
    size_t n, const char **rest)
{
	const char *a = strstr(text, start), *b;
	size_t len;

	if (a == NULL)
		return false;
	a += strlen(start);
	b = end ? strstr(a, end) : a + strlen(a);
	if (b == NULL)
		return false;
	len = (size_t)(b - a);
	if (len >= n)
		len = n - 1;
	memcpy(out, a, len);
	out[len] = '\0';
	if (rest != NULL)
		*rest = b;
	return true;
}

bool
dlq_topology_parse_conflict(const char *text, char *arg, size_t na,
    char *wanted, size_t nw, char *live, size_t nl)
{
	const char *rest;

	if (!between(text, "inequivalent arg '", "'", arg, na, &rest))
		return false;
	if (!between(rest, ": received ", " but current is ", wanted, nw, &rest))
		return false;
	return between(rest, " but current is ", NULL, live, nl, NULL);
}

struct asserter {
	amqp_connection_state_t	 conn;
	const struct dlq_config	*cfg;
	struct dlq_assert_result *res;
	bool			 lost;
	/* the binding being declared, and the management API client that
	 * looks for it when that is refused (opened at the first) */
	const char		*bind_exchange, *bind_queue, *bind_key;
	struct dlq_mgmt		*mgmt;
};

/* How long the management API may take for all the bindings. */
#define BINDINGS_TIMEOUT_MS	10000

/* A binding the broker user may not declare: AMQP cannot show it, the
 * management API can (rabbitmq.management_url). Found, missing (logged)
 * or, without the API or once it failed, unchecked. */
static void
look_for_binding(struct asserter *a, const char *name)
{
	struct dlq_assert_result *res = a->res;
	int rc = -1;

	if (a->cfg->management_url != NULL && res->bindings_why[0] == '\0') {
		if (a->mgmt == NULL && (a->mgmt = dlq_mgmt_open(a->cfg,
		    dlq_now_ms() + BINDINGS_TIMEOUT_MS)) == NULL)
			snprintf(res->bindings_why, sizeof(res->bindings_why),
			    "out of memory");
		else
			rc = dlq_mgmt_bound(a->mgmt, a->bind_exchange,
			    a->bind_queue, a->bind_key, res->bindings_why,
			    sizeof(res->bindings_why));
	}
	if (rc == 0)
		res->present++;
	else if (rc == 1) {
		res->missing++;
		if (res->missing_bindings++ == 0)
			snprintf(res->missing_binding,
			    sizeof(res->missing_binding), "%s", name);
		dlq_log(DLQ_LOG_ERR, "topology_missing", "object", "binding",
		    "name", name, "error", "not on the broker (the management "
		    "API lists no binding with this routing key), and declaring "
		    "it was refused", NULL);
	} else
		res->unchecked++;
}

/* The reply of the last method: 0 when normal, else the channel error's
 * code with the broker's words in `text`; -1 when the connection was
 * lost (logged). */
static int
reply_code(struct asserter *a, const char *kind, const char *name,
    char *text, size_t n)
{
	amqp_rpc_reply_t r = amqp_get_rpc_reply(a->conn);
	int code = 0;

	if (r.reply_type == AMQP_RESPONSE_NORMAL)
		return 0;
	dlq_amqp_reply_text(r, text, n);
	if (!dlq_amqp_is_channel_error(r, &code)) {
		dlq_log(DLQ_LOG_ERR, "topology_assert_failed", "object", kind,
		    "name", name, "error", text, NULL);
		a->lost = true;
		return -1;
	}
	return code;
}

/* Lists `name` among the queues found missing, if it fits. */
static void
note_missing_queue(struct dlq_assert_result *res, const char *name)
{
	size_t used = strlen(res->missing_queues), n = strlen(name);

	if (used + n + 2 > sizeof(res->missing_queues))
		res->missing_queues_cut = true;
	else
		snprintf(res->missing_queues + used,
		    sizeof(res->missing_queues) - used, "%s\n", name);
}

int
dlq_assert_missing_queue(const struct dlq_assert_result *res,
    const char *name)
{
	const char *p = res->missing_queues;
	size_t n = strlen(name);

	for (; *p != '\0'; p = strchr(p, '\n') + 1)
		if (strncmp(p, name, n) == 0 && p[n] == '\n')
			return 1;
	return res->missing_queues_cut ? -1 : 0;
}

/* A declaration the broker refused for want of a permission (a user
 * without the configure permission, whose topology someone else
 * declares): not an error while what it names is there. Each exchange or
 * queue is looked for with a passive declare, which needs no permission
 * (its arguments are not compared); one that is not there is logged. A
 * binding, which AMQP cannot show, is looked for in the management API.
 * Reopens the channel. */
static void
refused(struct asserter *a, const char *kind, const char *name,
    const char *text)
{
	char why[512], what[640];
	int code;

	if (a->res->refused++ == 0)
		snprintf(a->res->refusal, sizeof(a->res->refusal), "%s", text);
	if (dlq_amqp_reopen_channel(a->conn) == -1) {
		a->lost = true;
		return;
	}
	if (strcmp(kind, "binding") == 0) {
		look_for_binding(a, name);
		return;
	}
	if (strcmp(kind, "exchange") == 0)
		amqp_exchange_declare(a->conn, DLQ_AMQP_CHANNEL,
		    amqp_cstring_bytes(name), amqp_cstring_bytes("direct"), 1,
		    0, 0, 0, amqp_empty_table);
	else
		amqp_queue_declare(a->conn, DLQ_AMQP_CHANNEL,
		    amqp_cstring_bytes(name), 1, 0, 0, 0, amqp_empty_table);
	if ((code = reply_code(a, kind, name, why, sizeof(why))) == 0)
		a->res->present++;
	if (code <= 0)
		return;
	if (code == AMQP_NOT_FOUND) {
		a->res->missing++;
		if (strcmp(kind, "queue") == 0)
			note_missing_queue(a->res, name);
		snprintf(what, sizeof(what), "not on the broker, and declaring "
		    "it was refused (%s)", text);
		dlq_log(DLQ_LOG_ERR, "topology_missing", "object", kind,
		    "name", name, "error", what, NULL);
	} else {
		a->res->errors++;
		dlq_log(DLQ_LOG_ERR, "topology_error", "object", kind,
		    "name", name, "error", why, NULL);
	}
	if (dlq_amqp_reopen_channel(a->conn) == -1)
		a->lost = true;
}

/* Looks at the reply of the last declare/bind: counts it, reports a
 * conflict or an error, reopens the channel after a channel error. */
static void
check_reply(struct asserter *a, const char *kind, const char *name)
{
	char text[512], arg[128], wanted[192], live[192];
	bool after_missing;
	int code;

	if ((code = reply_code(a, kind, name, text, sizeof(text))) == 0)
		a->res->declared++;
	if (code <= 0)
		return;
	if (code == AMQP_ACCESS_REFUSED) {
		refused(a, kind, name, text);
		return;
	}
	/* a binding to a queue or exchange already logged as missing */
	after_missing = code == AMQP_NOT_FOUND && a->res->missing > 0 &&
	    strcmp(kind, "binding") == 0;
	if (code == AMQP_PRECONDITION_FAILED) {
		a->res->conflicts++;
		if (!dlq_topology_parse_conflict(text, arg, sizeof(arg), wanted,
		    sizeof(wanted), live, sizeof(live)))
			arg[0] = wanted[0] = live[0] = '\0';
		dlq_log(DLQ_LOG_ERR, "topology_conflict", "object", kind,
		    "name", name, "argument", arg[0] ? arg : NULL,
		    "live", live[0] ? live : NULL,
		    "wanted", wanted[0] ? wanted : NULL,
		    "detail", text, "action", "left unchanged", NULL);
	} else if (!after_missing) {
		a->res->errors++;
		dlq_log(DLQ_LOG_ERR, "topology_error", "object", kind,
		    "name", name, "error", text, NULL);
	}
	if (dlq_amqp_reopen_channel(a->conn) == -1)
		a->lost = true;
}

static void
declare_exchange(struct asserter *a, const char *name)
{
	if (a->lost)
		return;
	amqp_exchange_declare(a->conn, DLQ_AMQP_CHANNEL,
	    amqp_cstring_bytes(name), amqp_cstring_bytes("direct"), 0, 1, 0, 0,
	    amqp_empty_table);
	check_reply(a, "exchange", name);
}

struct args {
	amqp_table_entry_t	e[8];
	amqp_table_t		t;
};

static void
arg_str(struct args *a, const char *k, const char *v)
{
	amqp_table_entry_t *e = &a->e[a->t.num_entries++];

	e->key = amqp_cstring_bytes(k);
	e->value.kind = AMQP_FIELD_KIND_UTF8;
	e->value.value.bytes = amqp_cstring_bytes(v);
}

/* Integer arguments go out as signed 64-bit: the broker refuses strings. */
static void
arg_int(struct args *a, const char *k, int64_t v)
{
	amqp_table_entry_t *e = &a->e[a->t.num_entries++];

	e->key = amqp_cstring_bytes(k);
	e->value.kind = AMQP_FIELD_KIND_I64;
	e->value.value.i64 = v;
}

static void
args_init(struct args *a, const struct dlq_queue *q)
{
	a->t.entries = a->e;
	a->t.num_entries = 0;
	if (q->type == DLQ_QUEUE_QUORUM)
		arg_str(a, "x-queue-type", "quorum");
}

/* At least once: a dead letter stays in its quorum queue until the
 * queue it is routed to confirms it. RabbitMQ falls back to at most
 * once unless the queue's overflow is reject-publish (which only matters
 * with a length limit, and this topology sets none). */
static void
dead_letter_strategy(struct args *a, const struct dlq_queue *q)
{
	if (!q->at_least_once)
		return;
	arg_str(a, "x-dead-letter-strategy", "at-least-once");
	arg_str(a, "x-overflow", "reject-publish");
}

static void
declare_queue(struct asserter *a, const char *name, struct args *args)
{
	if (a->lost)
		return;
	amqp_queue_declare(a->conn, DLQ_AMQP_CHANNEL, amqp_cstring_bytes(name),
	    0, 1, 0, 0, args->t);
	check_reply(a, "queue", name);
}

static void
bind_queue(struct asserter *a, const char *queue, const char *exchange,
    const char *key)
{
	char what[600];

	if (a->lost)
		return;
	amqp_queue_bind(a->conn, DLQ_AMQP_CHANNEL, amqp_cstring_bytes(queue),
	    amqp_cstring_bytes(exchange), amqp_cstring_bytes(key),
	    amqp_empty_table);
	snprintf(what, sizeof(what), "%s -> %s", exchange, queue);
	a->bind_exchange = exchange;
	a->bind_queue = queue;
	a->bind_key = key;
	check_reply(a, "binding", what);
}

/* Declares everything on channel DLQ_AMQP_CHANNEL of `conn`. Returns 0
 * when the connection is still usable (see `res` for conflicts and
 * errors), -1 when it was lost (logged; connect again and retry). */
static int
assert_all(amqp_connection_state_t conn, const struct dlq_config *c,
    const struct dlq_topology *t, struct dlq_assert_result *res)
{
	struct asserter a = { .conn = conn, .cfg = c, .res = res };
	struct args args;
	size_t i;

	memset(res, 0, sizeof(*res));
	declare_exchange(&a, t->work_exchange);
	declare_exchange(&a, t->dead_letter_exchange);
	for (i = 0; i < t->n_queues && !a.lost; i++) {
		const struct dlq_queue *q = &t->queues[i];

		args_init(&args, q);
		arg_str(&args, "x-dead-letter-exchange", t->dead_letter_exchange);
		arg_str(&args, "x-dead-letter-routing-key", q->name);
		if (q->delivery_limit > 0)
			arg_int(&args, "x-delivery-limit", q->delivery_limit);
		dead_letter_strategy(&args, q);
		declare_queue(&a, q->name, &args);
		bind_queue(&a, q->name, t->work_exchange, q->name);

		if (q->retry_name != NULL) {
			args_init(&args, q);
			arg_int(&args, "x-message-ttl", q->retry_delay_ms);
			arg_str(&args, "x-dead-letter-exchange", "");
			arg_str(&args, "x-dead-letter-routing-key", q->name);
			dead_letter_strategy(&args, q);
			declare_queue(&a, q->retry_name, &args);
		}

		args_init(&args, q);
		declare_queue(&a, q->dlq_name, &args);
		bind_queue(&a, q->dlq_name, t->dead_letter_exchange, q->name);
	}
	dlq_mgmt_close(a.mgmt);
	return a.lost ? -1 : 0;
}

/* One line for all the declarations refused for want of a permission:
 * a worker whose user may not configure the topology is a deployment
 * choice, not one error per queue at every start. */
static void
log_not_permitted(const struct dlq_assert_result *res, struct dlq_buf *b)
{
	if (!dlq_log_begin(b, res->missing || res->unchecked ? DLQ_LOG_WARN :
	    DLQ_LOG_INFO, "topology_not_permitted"))
		return;
	dlq_log_int(b, "refused", res->refused);
	dlq_log_int(b, "present", res->present);
	dlq_log_int(b, "missing", res->missing);
	dlq_log_int(b, "bindings_unchecked", res->unchecked);
	dlq_log_str(b, "error", res->refusal);
	if (res->bindings_why[0] != '\0')
		dlq_log_str(b, "bindings_error", res->bindings_why);
	dlq_log_str(b, "advice", "the broker user may not declare these: "
	    "each exchange and queue was looked for instead (arguments not "
	    "compared), bindings through the management API when "
	    "rabbitmq.management_url is set. Grant the configure permission, "
	    "or let a user who has it declare the topology (dlqctl topology "
	    "assert)");
	dlq_log_end(b);
}

enum dlq_amqp_status
dlq_topology_apply(const struct dlq_config *c, const struct dlq_topology *t,
    struct dlq_assert_result *res, char *why, size_t whylen)
{
	amqp_connection_state_t conn;
	enum dlq_amqp_status st;
	struct dlq_buf b;
	int rc;

	conn = dlq_amqp_connect(c, "dlq-monitor topology", &st, why, whylen);
	if (conn == NULL)
		return st;
	rc = assert_all(conn, c, t, res);
	dlq_amqp_close(conn);
	if (rc == -1) {
		snprintf(why, whylen, "connection lost while asserting");
		return DLQ_AMQP_RETRY;
	}
	dlq_buf_init(&b);
	if (res->refused > 0)
		log_not_permitted(res, &b);
	if (dlq_log_begin(&b, res->conflicts || res->errors || res->missing ?
	    DLQ_LOG_WARN : DLQ_LOG_INFO, "topology_asserted")) {
		dlq_log_str(&b, "source", t->source);
		dlq_log_int(&b, "queues", (int64_t)t->n_queues);
		dlq_log_int(&b, "monitored", (int64_t)dlq_topology_monitored(t));
		dlq_log_int(&b, "declared", res->declared);
		dlq_log_int(&b, "conflicts", res->conflicts);
		dlq_log_int(&b, "errors", res->errors);
		dlq_log_int(&b, "refused", res->refused);
		dlq_log_int(&b, "missing", res->missing);
		dlq_log_end(&b);
	}
	dlq_buf_release(&b);
	return DLQ_AMQP_OK;
}
