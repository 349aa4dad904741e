/* conflists.c - the configuration's lists of groups: alert.targets,
 * classify.rules and replay.queues, each entry checked, and the replay
 * policy a queue gets from them. */
#include "conflists.h"

#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "confint.h"
#include "confparse.h"
#include "suggest.h"
#include "termtext.h"
#include "url.h"

void
dlq_conf_targets_release(struct dlq_target *t, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (t[i].url != NULL)
			explicit_bzero(t[i].url, strlen(t[i].url));
		free(t[i].url);
		free(t[i].ca_cert);
	}
	free(t);
}

/* Each of `keys` that the group `e` holds is a string: a hint = 3 or a
 * format = 2 would otherwise be taken as left out, without a word. */
static int
strings_only(const config_setting_t *e, const char *section,
    const char *const *keys, const char *path, struct dlq_buf *errors)
{
	const config_setting_t *m;
	char where[PATH_MAX + 16];
	int rc = 0;

	for (; *keys != NULL; keys++) {
		if ((m = config_setting_get_member(e, *keys)) == NULL ||
		    config_setting_type(m) == CONFIG_TYPE_STRING)
			continue;
		dlq_conf_where(m, path, where, sizeof(where));
		dlq_buf_printf(errors, "%s: %s: %s must be a string "
		    "(\"...\")\n", where, section, *keys);
		rc = -1;
	}
	return rc;
}

/* A target's ca_cert: a readable file, relative to the config file. */
static int
read_target_ca(struct dlq_target *t, const config_setting_t *e,
    const char *path, const char *where, struct dlq_buf *errors)
{
	const char *v;

	if (!config_setting_lookup_string(e, "ca_cert", &v)) {
		if (config_setting_get_member(e, "ca_cert") == NULL)
			return 0;
		dlq_buf_printf(errors, "%s: alert.targets: ca_cert must be a "
		    "string (a PEM file name)\n", where);
		return -1;
	}
	if (*v == '\0' || dlq_term_has_control(v, false)) {
		dlq_buf_printf(errors, "%s: alert.targets: ca_cert %s\n", where,
		    *v == '\0' ? "must not be empty (leave it out for the "
		    "system's CAs)" : "must not contain control characters (a "
		    "trailing newline?)");
		return -1;
	}
	t->ca_cert = strdup(v);
	dlq_conf_resolve_relative(&t->ca_cert, path);
	return dlq_conf_check_readable("alert.targets: ca_cert", t->ca_cert, where,
	    errors);
}

/* alert.targets = ( { url = "https://..."; format = "slack";
 * ca_cert = "internal-ca.pem"; }, ... ) */
int
dlq_conf_read_targets(struct dlq_config *c, const config_setting_t *list,
    const char *path, struct dlq_buf *errors)
{
	static const char *const members[] = { "url", "format", "ca_cert",
	    NULL };
	const config_setting_t *e;
	const char *url, *fmt, *why;
	char where[PATH_MAX + 16];
	unsigned i, n = (unsigned)config_setting_length(list);
	struct dlq_target *t;
	int rc = 0;

	dlq_conf_targets_release(c->extra_targets, c->n_extra_targets);
	c->n_extra_targets = 0;
	if ((c->extra_targets = calloc(n + 1, sizeof(*c->extra_targets))) == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(list, i);
		dlq_conf_where(e, path, where, sizeof(where));
		url = fmt = NULL;
		if (config_setting_type(e) != CONFIG_TYPE_GROUP ||
		    !config_setting_lookup_string(e, "url", &url)) {
			dlq_buf_printf(errors, "%s: alert.targets: each target "
			    "needs url = \"http(s)://...\"\n", where);
			rc = -1;
			continue;
		}
		if ((why = dlq_url_http_problem(url)) != NULL) {
			dlq_buf_printf(errors, "%s: alert.targets: url %s\n",
			    where, why);
			rc = -1;
			continue;
		}
		if (dlq_conf_check_members(e, "alert.targets", members, where,
		    errors) == -1 || strings_only(e, "alert.targets",
		    (const char *const[]){ "format", NULL }, path, errors) == -1)
			rc = -1;
		t = &c->extra_targets[c->n_extra_targets++];
		t->url = strdup(url);
		t->format = DLQ_FORMAT_AUTO;
		if (config_setting_lookup_string(e, "format", &fmt) &&
		    dlq_alert_format_parse(fmt, &t->format) == -1) {
			dlq_buf_printf(errors, "%s: alert.targets: bad format "
			    "'%s': expected auto, slack, google_chat, discord or "
			    "plain\n",
			    where, fmt);
			rc = -1;
		}
		if (read_target_ca(t, e, path, where, errors) == -1)
			rc = -1;
	}
	return rc;
}

void
dlq_conf_rules_release(struct dlq_rule_cfg *r, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(r[i].match);
		free(r[i].reason);
		free(r[i].queue);
		free(r[i].class);
		free(r[i].hint);
		free(r[i].link);
	}
	free(r);
}


static const char *const rule_keys[] = { "match", "reason", "queue",
	"class", "hint", "link", NULL };

static char *
rule_str(const config_setting_t *e, const char *key)
{
	const char *v;

	return config_setting_lookup_string(e, key, &v) ? strdup(v) : NULL;
}

static bool
regex_ok(const char *re, char *why, size_t n)
{
	regex_t r;
	int rc;

	if (re == NULL)
		return true;
	if ((rc = regcomp(&r, re, REG_EXTENDED | REG_ICASE | REG_NOSUB)) != 0) {
		regerror(rc, &r, why, n);
		return false;
	}
	regfree(&r);
	return true;
}

/* classify.rules = ( { match = "regex"; reason = "..."; queue = "regex";
 *                      class = "transient"; hint = "..."; link = "..."; } ) */
int
dlq_conf_read_rules(struct dlq_config *c, const config_setting_t *list,
    const char *path, struct dlq_buf *errors)
{
	const config_setting_t *e;
	struct dlq_rule_cfg *r;
	char where[PATH_MAX + 16], why[128];
	unsigned i, n = (unsigned)config_setting_length(list);
	int rc = 0;

	dlq_conf_rules_release(c->rules, c->n_rules);
	c->n_rules = 0;
	if ((c->rules = calloc(n + 1, sizeof(*c->rules))) == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(list, i);
		dlq_conf_where(e, path, where, sizeof(where));
		if (config_setting_type(e) != CONFIG_TYPE_GROUP) {
			dlq_buf_printf(errors, "%s: classify.rules: each rule "
			    "must be a group { ... }\n", where);
			rc = -1;
			continue;
		}
		if (dlq_conf_check_members(e, "classify.rules", rule_keys, where,
		    errors) == -1)
			rc = -1;
		if (strings_only(e, "classify.rules", rule_keys, path,
		    errors) == -1) {
			rc = -1;	/* what follows would say it again */
			continue;
		}
		r = &c->rules[c->n_rules++];
		r->match = rule_str(e, "match");
		r->reason = rule_str(e, "reason");
		r->queue = rule_str(e, "queue");
		r->class = rule_str(e, "class");
		r->hint = rule_str(e, "hint");
		r->link = rule_str(e, "link");
		if (r->class == NULL || !dlq_class_valid(r->class)) {
			dlq_buf_printf(errors, "%s: classify.rules: class must be "
			    "one of " DLQ_CLASS_LIST "\n", where);
			rc = -1;
		}
		if (r->match == NULL && r->reason == NULL && r->queue == NULL) {
			dlq_buf_printf(errors, "%s: classify.rules: a rule needs "
			    "match, reason or queue\n", where);
			rc = -1;
		}
		if (!regex_ok(r->match, why, sizeof(why)) ||
		    !regex_ok(r->queue, why, sizeof(why))) {
			dlq_buf_printf(errors, "%s: classify.rules: bad regular "
			    "expression: %s\n", where, why);
			rc = -1;
		}
	}
	return rc;
}

/* Forgets the queues `key` named (a setting read again replaces them). */
void
dlq_conf_queue_refs_drop(struct dlq_config *c, const char *key)
{
	size_t i, k = 0;

	for (i = 0; i < c->n_queue_refs; i++) {
		if (strcmp(c->queue_refs[i].key, key) == 0) {
			free(c->queue_refs[i].name);
			free(c->queue_refs[i].where);
		} else
			c->queue_refs[k++] = c->queue_refs[i];
	}
	c->n_queue_refs = k;
}

int
dlq_conf_queue_ref_add(struct dlq_config *c, const char *key, const char *name,
    const char *where)
{
	struct dlq_queue_ref *more, *r;

	more = realloc(c->queue_refs, (c->n_queue_refs + 1) * sizeof(*more));
	if (more == NULL)
		return -1;
	c->queue_refs = more;
	r = &more[c->n_queue_refs];
	r->key = key;
	r->name = strdup(name);
	r->where = strdup(where);
	if (r->name == NULL || r->where == NULL) {
		free(r->name);
		free(r->where);
		return -1;
	}
	c->n_queue_refs++;
	return 0;
}

void
dlq_conf_policies_release(struct dlq_replay_policy *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(p[i].queue);
		dlq_strlist_release(&p[i].never);
	}
	free(p);
}

static const char *const policy_keys[] = { "queue", "max_age_ms",
	"max_replays", "never", "require_owner", "evidence_max_age_ms", NULL };

/* One integer of a replay.queues entry, 0..max, into *out when present
 * (else *out is left alone). -1 when it is not a fitting integer. */
static int
policy_int(const config_setting_t *e, const char *key, int64_t max,
    const char *path, const char *where, struct dlq_buf *errors,
    int64_t *out)
{
	const config_setting_t *m = config_setting_get_member(e, key);
	char text[64];
	int64_t v;

	if (m == NULL)
		return 0;
	if (config_setting_type(m) != CONFIG_TYPE_INT &&
	    config_setting_type(m) != CONFIG_TYPE_INT64) {
		dlq_buf_printf(errors, "%s: replay.queues: %s must be an "
		    "integer\n", where, key);
		return -1;
	}
	if (!dlq_confint_get(m, path, &v, text, sizeof(text)) || v < 0 ||
	    v > max) {
		dlq_buf_printf(errors, "%s: replay.queues: %s: bad value '%s': "
		    "out of range 0..%lld\n", where, key, text, (long long)max);
		return -1;
	}
	*out = v;
	return 1;
}

/* A replay.queues entry's boolean `key`: true or false, not a number or
 * a word (which would leave the policy off without a word). 1 when set
 * (into *out), 0 when absent, -1 on an error (said). */
static int
policy_bool(const config_setting_t *e, const char *key, const char *path,
    struct dlq_buf *errors, int *out)
{
	const config_setting_t *m = config_setting_get_member(e, key);
	char where[PATH_MAX + 16];

	if (m == NULL)
		return 0;
	if (config_setting_type(m) != CONFIG_TYPE_BOOL) {
		dlq_conf_where(m, path, where, sizeof(where));
		dlq_buf_printf(errors, "%s: replay.queues: %s must be true or "
		    "false\n", where, key);
		return -1;
	}
	*out = config_setting_get_bool(m);
	return 1;
}

/* A replay.queues entry's never = [ "class", ... ]: known classes, a bad
 * one said by its line, element and value as replay.never's are. */
static int
policy_never(struct dlq_replay_policy *p, const config_setting_t *k,
    const char *path, struct dlq_buf *errors)
{
	char where[PATH_MAX + 16];
	const char **names;
	unsigned j, n = (unsigned)config_setting_length(k);

	dlq_conf_where(k, path, where, sizeof(where));
	if (config_setting_type(k) != CONFIG_TYPE_ARRAY &&
	    config_setting_type(k) != CONFIG_TYPE_LIST) {
		dlq_buf_printf(errors, "%s: replay.queues: never must be a list "
		    "of classes [ \"...\" ]\n", where);
		return -1;
	}
	if ((names = calloc(n + 1, sizeof(*names))) == NULL)
		return -1;
	for (j = 0; j < n; j++) {
		names[j] = config_setting_get_string_elem(k, j);
		if (names[j] != NULL && dlq_class_valid(names[j]))
			continue;
		dlq_conf_where(config_setting_get_elem(k, j), path, where,
		    sizeof(where));
		if (names[j] == NULL)
			dlq_buf_printf(errors, "%s: replay.queues: never: element "
			    "%u: not a string (\"...\")\n", where, j + 1);
		else
			dlq_buf_printf(errors, "%s: replay.queues: never: bad "
			    "value '%s': element %u: unknown class (known: "
			    DLQ_CLASS_LIST ")\n", where, names[j], j + 1);
		free(names);
		return -1;
	}
	dlq_conf_list_set(&p->never, names);
	p->has_never = true;
	free(names);
	return 0;
}

/* replay.queues = ( { queue = "q"; max_age_ms = ...; max_replays = ...;
 *                     never = [ ... ]; require_owner = true; } ) */
int
dlq_conf_read_policies(struct dlq_config *c, const config_setting_t *list,
    const char *path, struct dlq_buf *errors)
{
	const config_setting_t *e, *k;
	struct dlq_replay_policy *p;
	char where[PATH_MAX + 16];
	unsigned i, n = (unsigned)config_setting_length(list);
	int rc = 0;

	dlq_conf_policies_release(c->replay_queues, c->n_replay_queues);
	c->n_replay_queues = 0;
	dlq_conf_queue_refs_drop(c, "replay.queues");
	if ((c->replay_queues = calloc(n + 1, sizeof(*c->replay_queues))) ==
	    NULL)
		return -1;
	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(list, i);
		dlq_conf_where(e, path, where, sizeof(where));
		p = &c->replay_queues[c->n_replay_queues];
		p->max_age_ms = p->max_replays = -1;
		p->evidence_max_age_ms = -1;
		p->require_owner = -1;
		p->queue = rule_str(e, "queue");
		if (config_setting_type(e) != CONFIG_TYPE_GROUP ||
		    p->queue == NULL || *p->queue == '\0') {
			dlq_buf_printf(errors, "%s: replay.queues: each entry needs "
			    "queue = \"name\"\n", where);
			free(p->queue);
			rc = -1;
			continue;
		}
		c->n_replay_queues++;
		if (dlq_conf_queue_ref_add(c, "replay.queues", p->queue, where) == -1)
			return -1;
		if (dlq_conf_check_members(e, "replay.queues", policy_keys, where,
		    errors) == -1)
			rc = -1;
		if (policy_int(e, "max_age_ms", 3650LL * 86400000, path, where,
		    errors, &p->max_age_ms) == -1 ||
		    policy_int(e, "max_replays", 1000, path, where, errors,
		    &p->max_replays) == -1 ||
		    policy_int(e, "evidence_max_age_ms", 3650LL * 86400000, path,
		    where, errors, &p->evidence_max_age_ms) == -1)
			rc = -1;
		if (policy_bool(e, "require_owner", path, errors,
		    &p->require_owner) == -1)
			rc = -1;
		if ((k = config_setting_get_member(e, "never")) != NULL &&
		    policy_never(p, k, path, errors) == -1)
			rc = -1;
	}
	return rc;
}

