/* classify.c - ordered rules: configured first, then the defaults below,
 * which cover the failures the source documents name. */
#include "classify.h"

#include <ctype.h>
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
	uint64_t	 hash;		/* dlq_classify_rules_hash() */
};

static const char GENERIC_HINT[] = "Inspect the payload and the consumer's "
    "logs for this queue; fix the cause, replay one message, then the rest "
    "in a small batch.";

/* A status code is a word of its own: "(\\b|_)429" says "(^|[^0-9a-z])429"
 * (a boundary between a word character and another, or an underscore;
 * the worker keeps the C locale, where a word character is a letter, a
 * digit or '_'), but regexec tries it only where a '4' is, not at every
 * character: eight times faster on a text that has none. */

/* The reply codes a mail server sends (RFC 5321): for later, and for
 * good. Not any number in the 400s or 500s: "smtp:587" is a port. */
#define SMTP_LATER	"4(2[01]|5[0-5])"
#define SMTP_REFUSED	"5(0[0-4]|2[01]|3[0-8]|5[0-6])"
/* A reply `code` followed by an enhanced code of class `c` ("550 5.1.1",
 * "450-4.2.1", RFC 3463), or after the word SMTP ("SMTP 550", "smtp;
 * 550", "SMTP error 451"); not within a word ("v550"). */
#define SMTP_REPLY(code, c)	"\\b" code "[ -]" c "\\.[0-9]{1,3}" \
	"\\.[0-9]{1,3}([^0-9]|$)|smtp[^0-9a-z]{1,3}((error|reply|code|" \
	"status)[^0-9a-z]{1,3})?" code "([^0-9]|$)"

/* A messaging provider's numeric error code as it writes it: Meta's
 * Graph API for WhatsApp ("(#131047) Re-engagement message", or
 * "code":131047 in a webhook's JSON), Twilio's ("Twilio error 63016",
 * "twilio 30005"); only codes of five or six digits, which no exit
 * status or HTTP code is */
#define PROVIDER_CODE(codes)	"(\\(#|\"?code\"?[:= ]{1,3}|twilio[^0-9a-z]" \
	"{1,3}((error|code)[^0-9a-z]{1,3})?)(" codes ")([^0-9]|$)"

/* The hint of the death reason `expired`, and of an error text saying it */
#define EXPIRED_HINT	"The message outlived its TTL; it is usually no longer " \
	"wanted (an expired OTP must not go out). Drop it with a reason " \
	"unless the business still needs it."

static const struct dlq_rule_cfg defaults[] = {
	{ NULL, "expired", NULL, "expired", EXPIRED_HINT, NULL },
	{ NULL, "maxlen", NULL, "transient", "The queue was full (its "
	    "x-max-length or x-max-length-bytes): the message was pushed out "
	    "before anyone processed it. Replay it once the consumers have "
	    "caught up.", NULL },
	{ "(\\b|_)429([^0-9a-z]|$)|too many requests|rate.?limit|"
	    "throttl|quota[ _](exceeded|exhausted)|resource.?exhausted|"
	    "request limit reached|healthy ecosystem engagement|"
	    "credits exceeded|"
	    PROVIDER_CODE("131049|130429|131048|131056"),
	    NULL, NULL, "rate_limited", "The receiver throttled us. Wait for "
	    "its quota to recover, then replay in a small batch with --rate.",
	    NULL },
	/* a mail server's reply code: 4xx for later, 5xx for good (RFC 5321;
	 * the enhanced code after it, RFC 3463, says the same in its first
	 * digit and what failed in the second). A bare 450 or 550 could be
	 * any number, so it counts only after the word SMTP or with an
	 * enhanced code; a temporary refusal of the login is still temporary */
	{ SMTP_REPLY(SMTP_LATER, "4") "|greylist", NULL, NULL, "transient",
	    "The receiving mail server deferred the message (an SMTP 4xx: "
	    "greylisting, a busy mailbox, a temporary limit); it expects the "
	    "sender to try again later. Replay in a small batch after a few "
	    "minutes.", NULL },
	/* a destination that is gone, in the words of Slack, Telegram,
	 * WhatsApp and Twilio; before security, whose "Forbidden:" Telegram
	 * says it with */
	{ "channel[ _]not[ _]found|not[ _]in[ _]channel|is_archived|"
	    "channel is archived|chat not found|user[ _]not[ _]found|"
	    "bot was (blocked|kicked)|user is deactivated|"
	    "unsubscribed recipient|opted out|message undeliverable|"
	    "stopped marketing messages|unknown destination handset|"
	    "landline or unreachable carrier|could not find to address|"
	    "initiate conversation with a user|bot is not a member|"
	    "group chat was deleted|upgraded to a supergroup|"
	    "(have no|not enough) rights to send|no_service|no_active_hooks|"
	    "team_disabled|"
	    PROVIDER_CODE("131026|131050|30005|30006|63003"), NULL, NULL,
	    "configuration", "The destination is gone or we are not in it "
	    "(a channel not found or archived, the bot removed or blocked, a "
	    "chat or user not found, a bot without the right to write there, "
	    "a Slack webhook removed, a recipient who opted out, a number "
	    "that is not on WhatsApp or not a mobile phone). A replay "
	    "fails the same way until the customer's workspace or chat is "
	    "connected again: have that fixed and replay one message, or "
	    "drop it.", NULL },
	/* WhatsApp's rule that a business answers freely only within 24
	 * hours of the customer's last message: too late, as a TTL */
	{ "re-engagement message|outside the allowed window|"
	    "24 hours have passed|customer service window|"
	    PROVIDER_CODE("131047|63016"), NULL, NULL, "expired",
	    "The customer's 24-hour window for free-form messages had closed "
	    "(WhatsApp's re-engagement rule): a replay fails the same way "
	    "until the customer writes again. Send an approved template "
	    "message instead, or drop it.", NULL },
	/* a messaging provider's refusal by policy: before transient,
	 * whose "temporar" WhatsApp's policy block says */
	{ "blocked for polic(y|ies) violations?|account has been locked|"
	    "message filtered|" PROVIDER_CODE("131031|30007"), NULL, NULL,
	    "security", "The provider refused it by policy or locked our "
	    "sending account (WhatsApp's block for policy violations or "
	    "account lock, a carrier's spam filter). Settle it with the "
	    "provider first (the account's standing, the message's content, "
	    "the sender's registration); a replay is refused again and "
	    "worsens the account's standing.", NULL },
	/* a mail server's refusal by policy, its own hint before the
	 * words of the rule after it */
	{ "\\b" SMTP_REFUSED "[ -]5\\.7\\.[0-9]{1,3}([^0-9]|$)",
	    NULL, NULL, "security",
	    "The receiving mail server refused the message by policy (an "
	    "SMTP 5.7.x: our login, SPF, DKIM or DMARC, a spam verdict, "
	    "relaying or the sender not allowed). Check the mail account and "
	    "the sending domain's records and reputation with the mail "
	    "provider; a replay bounces again until then.", NULL },
	{ "invalid_auth|token_revoked|token expired|unauthori[sz]ed|forbidden|"
	    "(\\b|_)40[13]([^0-9a-z]|$)|signature|access[ _]denied|"
	    "permission.?denied|unauthenticated|not authori[sz]ed|"
	    "not_authed|account_inactive|missing_scope|no_permission|"
	    "permissions? (error|issue)|" PROVIDER_CODE("20003") "|"
	    "token_expired|action_prohibited|posting_to_general_channel_denied|"
	    "restricted_action|invalid_access|esme_rinvpaswd|esme_rinvsysid|"
	    "esme_rbindfail|"
	    "(missing|restricted)[ _-]api[ _-]?key|"
	    "x509:|certificate (verify failed|has expired|signed by unknown)|"
	    "auth(entication)? (failed|"
	    "failure|error|required)|invalid[ _-](api[ _-]?key|credentials|"
	    "(access|bearer|refresh|auth) token|password)|invalid_token|"
	    "invalid_grant|bad credentials|"
	    "(token|api[ _-]?key|credentials) ((is|has) )?(invalid|revoked|"
	    "expired|not valid)",
	    NULL, NULL, "security",
	    "Credentials, a signature or a permission were refused. Fix the "
	    "token or the grant first; never replay before that.", NULL },
	/* the consumer's own word that it came too late, as the broker's
	 * death reason says it (a token's or certificate's expiry is the
	 * rule before) */
	{ "(otp|one.time (pass)?code|verification code|code|message|link) "
	    "((has|is|was) )?expired|expired before (delivery|sending|it was "
	    "sent)|validity period (expired|exceeded)", NULL, NULL, "expired",
	    EXPIRED_HINT, NULL },
	{ "enotfound|nxdomain|name or service not known|no such host|"
	    "could not resolve host|name does not resolve", NULL, NULL,
	    "configuration", "A host name did not resolve: a wrong host in "
	    "the consumer's settings, or an outage of its DNS. Check the "
	    "name; once it resolves, replay one message to confirm.", NULL },
	/* before "no route" of the rule after it */
	{ "no route to host|ehostunreach|enetunreach|network is unreachable",
	    NULL, NULL, "transient", "The network between the consumer and a "
	    "dependency was down (no route to host, network unreachable). "
	    "Once it is back, replay in a small batch.", NULL },
	{ "template.*(not found|does not exist)|route.*not found|"
	    "config.*(not found|missing)|no route|"
	    "unknown template|not configured|not (been )?enabled|sender id|"
	    "domain (is )?not verified|template is (paused|disabled)|"
	    "eligibility payment|not allowed to send|display name approval|"
	    PROVIDER_CODE("133010|131037|131042|131045"),
	    NULL, NULL,
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
	/* a hard bounce: before transient, whose "unavailable" it says */
	{ SMTP_REPLY(SMTP_REFUSED, "5") "|user unknown|"
	    "no such (user|recipient|mailbox)|recipient (address )?rejected|"
	    "mailbox (not found|does not exist|disabled)|"
	    "(address|recipient) does not exist", NULL, NULL, "validation",
	    "The receiving mail server refused it for good (an SMTP 5xx hard "
	    "bounce: no such mailbox, a disabled or full one, a message it "
	    "will not take). A replay bounces again and hurts the sending "
	    "domain's reputation: correct the address at the producer, or "
	    "drop it.", NULL },
	{ "time(d)? ?out|etimedout|econnreset|econnrefused|connection (reset|"
	    "refused|closed|lost)|circuit.*open|(\\b|_)50[0-9]([^0-9a-z]|$)|"
	    "econnaborted|eai_again|internal[ _]server[ _]error|"
	    "internal_error|fatal_error|esme_rmsgqful|esme_rsyserr|"
	    "service unavailable|bad gateway|temporar|try again|unavailable|"
	    "deadline.?exceeded|socket hang up|broken pipe|epipe|"
	    "deadlock detected|could not serialize access|database is locked|"
	    "too many connections|unreachable destination handset|"
	    "maintenance mode|"
	    PROVIDER_CODE("131000|30003|131016|131057"),
	    NULL, NULL, "transient", "A dependency was down or slow. Check its "
	    "status; once healthy, replay in a small batch.", NULL },
	{ "schema|validation|invalid|missing (required )?field|required field|"
	    "malformed|cannot parse|could not parse|unexpected token|"
	    "cannot unmarshal|unexpected end of json|deseriali[sz]|"
	    "bad request|(\\b|_)4(00|13|22)([^0-9a-z]|$)|"
	    "unprocessable|(payload|entity|message) too large|msg_too_long|"
	    "not a valid|exceeds [0-9]+ (characters|chars|bytes)|"
	    "message (is )?too long|no_text|too_many_attachments|"
	    "recipient cannot be sender|"
	    "required parameter|parameter (value )?(is )?(missing|not valid)|"
	    "number of param|parameter format does not match|text too long|"
	    "unsupported message type|template format|media upload error|"
	    PROVIDER_CODE("131008|131009|131021|131051|131053|132000|132005|"
	    "132007|132012"), NULL, NULL,
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

/* FNV-1a of `s`, a NULL told from "" */
static uint64_t
mix(uint64_t h, const char *s)
{
	if (s == NULL)
		return (h ^ 0x100) * 0x100000001b3ULL;
	for (; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return (h ^ 0xff) * 0x100000001b3ULL;
}

static uint64_t
mix_rule(uint64_t h, const struct dlq_rule_cfg *c)
{
	h = mix(h, c->match);
	h = mix(h, c->reason);
	h = mix(h, c->queue);
	h = mix(h, c->class);
	return mix(h, c->hint != NULL ? c->hint : GENERIC_HINT);
}

/* The built-in patterns are written in lower case and matched against
 * the error text in lower case, without REG_ICASE: glibc's regexec
 * makes a case-folded copy of the text for every pattern it runs with
 * it (a third of the time of a text no rule matches). An upper-case
 * letter in one would never match (nor could \B and the like be used). */
static bool
lower_case(const char *pattern)
{
	for (; *pattern != '\0'; pattern++)
		if (isupper((unsigned char)*pattern))
			return false;
	return true;
}

/* A configured rule keeps REG_ICASE (on the lowered text it changes
 * nothing, and its own pattern may be written in capitals). */
static int
compile(struct rule *r, const struct dlq_rule_cfg *c, bool builtin)
{
	int flags = REG_EXTENDED | REG_NOSUB | (builtin ? 0 : REG_ICASE);

	memset(r, 0, sizeof(*r));
	if (c->match != NULL) {
		if ((builtin && !lower_case(c->match)) ||
		    regcomp(&r->match, c->match, flags) != 0)
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
	k->hash = mix(0xcbf29ce484222325ULL, GENERIC_HINT);
	for (i = 0; i < c->n_rules + NDEFAULTS; i++) {
		k->hash = mix_rule(k->hash, i < c->n_rules ? &c->rules[i] :
		    &defaults[i - c->n_rules]);
		if (compile(&k->rules[i], i < c->n_rules ? &c->rules[i] :
		    &defaults[i - c->n_rules], i >= c->n_rules) == -1) {
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

uint64_t
dlq_classify_rules_hash(const struct dlq_classifier *k)
{
	return k->hash;
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

/* The error text a worker keeps is at most 1 KiB (DLQ_ERROR_TEXT_MAX):
 * lowered on the stack; a longer one on the heap, and without the
 * memory for it, the class is unknown with the generic hint. */
#define TEXT_ON_STACK	1024

void
dlq_classify(const struct dlq_classifier *k, const char *queue,
    const char *reason, const char *error, struct dlq_classification *out)
{
	char buf[TEXT_ON_STACK + 1], *low = buf;
	size_t i, n = strlen(error);

	out->class = "unknown";
	out->hint = GENERIC_HINT;
	out->link = NULL;
	if (n >= sizeof(buf) && (low = malloc(n + 1)) == NULL)
		return;
	for (i = 0; i <= n; i++)
		low[i] = (char)tolower((unsigned char)error[i]);
	for (i = 0; k != NULL && i < k->n; i++)
		if (matches(&k->rules[i], queue, reason, low)) {
			out->class = k->rules[i].class;
			out->hint = k->rules[i].hint;
			out->link = k->rules[i].link;
			break;
		}
	if (low != buf)
		free(low);
}
