/* classify.c - ordered rules: configured first, then the defaults below,
 * which cover the failures the source documents name. */
#include "classify.h"

#include <regex.h>
#include <stdlib.h>
#include <string.h>

struct rule {
	regex_t		 match;
	regex_t		 queue;
	bool		 has_match, has_queue;
	const char	*reason;
	const char	*class;
	const char	*hint;
	const char	*link;
};

struct dlq_classifier {
	struct rule	*rules;
	size_t		 n;
};

static const char GENERIC_HINT[] = "Inspect the payload and the consumer's "
    "logs for this queue; fix the cause, replay one message, then the rest "
    "in a small batch.";

static const struct dlq_rule_cfg defaults[] = {
	{ NULL, "expired", NULL, "expired", "The message outlived its TTL; it "
	    "is usually no longer wanted (an expired OTP must not go out). Drop "
	    "it with a reason unless the business still needs it.", NULL },
	{ NULL, "maxlen", NULL, "transient", "The queue was full (its "
	    "x-max-length or x-max-length-bytes): the message was pushed out "
	    "before anyone processed it. Replay it once the consumers have "
	    "caught up.", NULL },
	{ "(^|[^0-9a-z])429([^0-9a-z]|$)|too many requests|rate.?limit|"
	    "throttl|quota (exceeded|exhausted)|resource.?exhausted",
	    NULL, NULL, "rate_limited", "The receiver throttled us. Wait for "
	    "its quota to recover, then replay in a small batch with --rate.",
	    NULL },
	{ "invalid_auth|token_revoked|token expired|unauthori[sz]ed|forbidden|"
	    "(^|[^0-9a-z])40[13]([^0-9a-z]|$)|signature|access denied|"
	    "permission.?denied|unauthenticated|not authori[sz]ed|"
	    "x509:|certificate (verify failed|has expired|signed by unknown)|"
	    "auth(entication)? (failed|"
	    "failure|error|required)|invalid (api[ _-]?key|credentials|"
	    "(access|bearer|refresh|auth) token|password)|invalid_token|"
	    "invalid_grant|bad credentials|"
	    "(token|api[ _-]?key|credentials) (is )?(invalid|revoked|expired)",
	    NULL, NULL, "security",
	    "Credentials, a signature or a permission were refused. Fix the "
	    "token or the grant first; never replay before that.", NULL },
	{ "template.*not found|route.*not found|config.*(not found|missing)|"
	    "no route|unknown template|not configured|sender id", NULL, NULL,
	    "configuration", "A template, route or setting is missing. Fix "
	    "the configuration, then replay one message to confirm.", NULL },
	/* a crash says nothing of the message: "invalid memory address" is
	 * not a validation error */
	{ "panic:|nil pointer|null ?pointer|segmentation fault|sigsegv|"
	    "stack ?overflow|index out of (range|bounds)|"
	    "traceback \\(most recent call last\\)", NULL, NULL, "unknown",
	    "The consumer crashed on this message: a bug in it, whatever the "
	    "message holds. Find its stack trace for this message id, fix "
	    "the consumer, then replay one message to confirm.", NULL },
	{ "time(d)? ?out|etimedout|econnreset|econnrefused|connection (reset|"
	    "refused|closed)|circuit.*open|(^|[^0-9a-z])50[0-9]([^0-9a-z]|$)|"
	    "service unavailable|bad gateway|temporar|try again|unavailable|"
	    "deadline.?exceeded|socket hang up|broken pipe|epipe|"
	    "deadlock detected|could not serialize access|database is locked|"
	    "too many connections",
	    NULL, NULL, "transient", "A dependency was down or slow. Check its "
	    "status; once healthy, replay in a small batch.", NULL },
	{ "schema|validation|invalid|missing (required )?field|required field|"
	    "malformed|cannot parse|could not parse|unexpected token|"
	    "cannot unmarshal|unexpected end of json|deseriali[sz]|"
	    "bad request|(^|[^0-9a-z])400([^0-9a-z]|$)", NULL, NULL,
	    "validation",
	    "The message itself is wrong. Fix the producer; replaying the same "
	    "bytes will fail again. Drop it, or correct and republish.", NULL },
	{ "unknown (provider |error |status )?code|incompatible|unsupported "
	    "version|unknown version|contract|unknown field", NULL, NULL,
	    "contract", "The two sides disagree on the message format or a "
	    "provider answered something unknown. Check recent releases.",
	    NULL },
	/* after the error texts: a consumer that requeues seldom says why */
	{ NULL, "delivery_limit", NULL, "unknown", "Its consumers gave it "
	    "back (requeued) until the quorum queue's delivery limit: they "
	    "crash, time out or requeue on an error with this very message. "
	    "Find their error for this message id first; replayed unchanged, "
	    "it will loop again.", NULL },
};

#define NDEFAULTS	(sizeof(defaults) / sizeof(defaults[0]))

static int
compile(struct rule *r, const struct dlq_rule_cfg *c)
{
	int flags = REG_EXTENDED | REG_ICASE | REG_NOSUB;

	memset(r, 0, sizeof(*r));
	if (c->match != NULL) {
		if (regcomp(&r->match, c->match, flags) != 0)
			return -1;
		r->has_match = true;
	}
	if (c->queue != NULL) {
		if (regcomp(&r->queue, c->queue, flags) != 0)
			return -1;
		r->has_queue = true;
	}
	r->reason = c->reason;
	r->class = c->class;
	r->hint = c->hint ? c->hint : GENERIC_HINT;
	r->link = c->link;
	return 0;
}

struct dlq_classifier *
dlq_classify_new(const struct dlq_config *c, struct dlq_buf *errors)
{
	struct dlq_classifier *k;
	size_t i;

	if ((k = calloc(1, sizeof(*k))) == NULL ||
	    (k->rules = calloc(c->n_rules + NDEFAULTS, sizeof(*k->rules))) ==
	    NULL) {
		free(k);
		return NULL;
	}
	for (i = 0; i < c->n_rules + NDEFAULTS; i++) {
		if (compile(&k->rules[i], i < c->n_rules ? &c->rules[i] :
		    &defaults[i - c->n_rules]) == -1) {
			if (errors != NULL)
				dlq_buf_printf(errors, "classify.rules: rule "
				    "%zu does not compile\n", i + 1);
			k->n = i + 1;
			dlq_classify_free(k);
			return NULL;
		}
		k->n = i + 1;
	}
	return k;
}

void
dlq_classify_free(struct dlq_classifier *k)
{
	size_t i;

	if (k == NULL)
		return;
	for (i = 0; i < k->n; i++) {
		if (k->rules[i].has_match)
			regfree(&k->rules[i].match);
		if (k->rules[i].has_queue)
			regfree(&k->rules[i].queue);
	}
	free(k->rules);
	free(k);
}

static bool
matches(const struct rule *r, const char *queue, const char *reason,
    const char *error)
{
	if (r->reason != NULL && strcmp(r->reason, reason) != 0)
		return false;
	if (r->has_queue && regexec(&r->queue, queue, 0, NULL, 0) != 0)
		return false;
	if (r->has_match && regexec(&r->match, error, 0, NULL, 0) != 0)
		return false;
	return true;
}

void
dlq_classify(const struct dlq_classifier *k, const char *queue,
    const char *reason, const char *error, struct dlq_classification *out)
{
	size_t i;

	for (i = 0; k != NULL && i < k->n; i++)
		if (matches(&k->rules[i], queue, reason, error)) {
			out->class = k->rules[i].class;
			out->hint = k->rules[i].hint;
			out->link = k->rules[i].link;
			return;
		}
	out->class = "unknown";
	out->hint = GENERIC_HINT;
	out->link = NULL;
}
