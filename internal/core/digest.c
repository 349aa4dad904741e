/* digest.c - group pending alerts and write the digest text.
 *
 * Text fits the target: Slack truncates at 40 000 characters and Google
 * Chat refuses messages over 32 000 bytes, so a digest stays far below
 * (alert.max_chars, 3 500 by default, counted in bytes), largest groups
 * first. Slack reads &, < and > as markup: they are escaped for it;
 * Google Chat's <...> markup and a mention ("@channel" pages a whole
 * Mattermost channel) are broken with a zero-width space; Discord
 * takes 2 000 characters at most and reads Markdown, whose characters
 * are escaped with a backslash. */
#include "digest.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "termtext.h"

#define FOOTER_RESERVE	96
#define DIGEST_CAUSE_QUEUES 5	/* queues a cause's line names */
#define DISCORD_MAX_BYTES 2000	/* its limit counts characters: fewer */

int
dlq_digest_init(struct dlq_digest *d, size_t max_groups)
{
	memset(d, 0, sizeof(*d));
	d->cap = max_groups;
	for (d->index_cap = 16; d->index_cap < max_groups * 2; d->index_cap *= 2)
		;
	return 0;	/* the tables come with the first group */
}

/* A consumer whose DLQ stays empty never needs its groups (37 consumers
 * would hold 0.8 MiB for nothing). */
static bool
allocate(struct dlq_digest *d)
{
	if (d->groups != NULL)
		return true;
	d->groups = malloc(d->cap * sizeof(*d->groups));
	d->index = calloc(d->index_cap, sizeof(*d->index));
	if (d->groups == NULL || d->index == NULL) {
		free(d->groups);
		free(d->index);
		d->groups = NULL;
		d->index = NULL;
		return false;
	}
	return true;
}

void
dlq_digest_release(struct dlq_digest *d)
{
	if (d == NULL)
		return;
	free(d->groups);
	free(d->index);
	free(d->notices);
	memset(d, 0, sizeof(*d));
}

void
dlq_digest_clear(struct dlq_digest *d)
{
	if (d->n > 0)
		memset(d->index, 0, d->index_cap * sizeof(*d->index));
	d->n = 0;
	d->total = 0;
	d->other_count = 0;
	d->n_other = 0;
	d->n_notices = 0;
	memset(d->notices_over, 0, sizeof(d->notices_over));
}

bool
dlq_digest_empty(const struct dlq_digest *d)
{
	size_t k;

	for (k = 0; k < DLQ_NOTICE_KINDS; k++)
		if (d->notices_over[k] > 0)
			return false;
	return d->total == 0 && d->n_notices == 0;
}

size_t
dlq_digest_groups(const struct dlq_digest *d)
{
	return d->n + d->n_other;
}

static void
copy(char *dst, size_t n, const char *src)
{
	size_t len = src ? strlen(src) : 0;

	if (len >= n)
		len = dlq_utf8_prefix(src, n - 1);
	memcpy(dst, src ? src : "", len);
	dst[len] = '\0';
}

void
dlq_group_set_error(struct dlq_group *g, const char *error)
{
	static const char more[] = "…";
	size_t len;

	if (error == NULL || strlen(error) < sizeof(g->error)) {
		copy(g->error, sizeof(g->error), error);
		return;
	}
	len = dlq_utf8_prefix(error, sizeof(g->error) - sizeof(more));
	memcpy(g->error, error, len);
	memcpy(g->error + len, more, sizeof(more));
}

static void
add_sample(struct dlq_group *g, const char *id)
{
	int i;

	if (id == NULL || *id == '\0' || g->n_samples >= DLQ_DIGEST_SAMPLES)
		return;
	for (i = 0; i < g->n_samples; i++)
		if (strncmp(g->samples[i], id, sizeof(g->samples[i]) - 1) == 0)
			return;
	copy(g->samples[g->n_samples++], sizeof(g->samples[0]), id);
}

/* Adds `hash` to a set of at most `max` distinct hashes (*n saturates). */
static void
add_distinct(uint64_t *set, size_t *n, size_t max, uint64_t hash)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (set[i] == hash)
			return;
	if (*n < max)
		set[(*n)++] = hash;
}

static void
count_other(struct dlq_digest *d, uint64_t hash, uint64_t count)
{
	d->other_count += count;
	add_distinct(d->other_hashes, &d->n_other, DLQ_DIGEST_OTHER_MAX, hash);
}

/* The group for `hash`, created when there is room; NULL when full. */
static struct dlq_group *
lookup(struct dlq_digest *d, uint64_t hash, bool *created)
{
	size_t mask = d->index_cap - 1, i = (size_t)hash & mask;
	struct dlq_group *g;

	*created = false;
	if (!allocate(d))
		return NULL;	/* counted as "other" */
	for (; d->index[i] != 0; i = (i + 1) & mask)
		if (d->groups[d->index[i] - 1].hash == hash)
			return &d->groups[d->index[i] - 1];
	if (d->n >= d->cap)
		return NULL;
	g = &d->groups[d->n];
	memset(g, 0, sizeof(*g));
	g->hash = hash;
	d->index[i] = (uint32_t)++d->n;
	*created = true;
	return g;
}

void
dlq_digest_add(struct dlq_digest *d, const struct dlq_alert_event *e,
    bool is_new)
{
	struct dlq_group *g;
	bool created;

	d->total++;
	if ((g = lookup(d, e->hash, &created)) == NULL) {
		count_other(d, e->hash, 1);
		return;
	}
	if (created) {
		/* per group, not per dead letter */
		if (e->normalized != NULL)
			g->cause = dlq_signature_cause(e->reason, e->class,
			    e->normalized);
		copy(g->queue, sizeof(g->queue), e->queue);
		copy(g->reason, sizeof(g->reason), e->reason);
		copy(g->class, sizeof(g->class), e->class);
		dlq_group_set_error(g, e->error);
		g->first_ms = e->at_ms;
	}
	g->count++;
	g->is_new |= is_new;
	if (e->at_ms > g->last_ms)
		g->last_ms = e->at_ms;
	if (e->at_ms < g->first_ms)
		g->first_ms = e->at_ms;
	add_sample(g, e->message_id);
}

/* Counts `hash` among the notice's distinct subjects. */
static void
count_subject(struct dlq_notice *n, uint64_t hash)
{
	add_distinct(n->subjects, &n->n_subjects, DLQ_NOTICE_SUBJECTS, hash);
}

/* The notice of `kind` with `text`, made when new (with `subject` as the
 * one it names); NULL when the digest keeps no more (counted over). */
static struct dlq_notice *
find_notice(struct dlq_digest *d, enum dlq_notice_kind kind,
    const char *subject, const char *text)
{
	char cut[DLQ_NOTICE_TEXT_MAX];
	struct dlq_notice *n;
	size_t i;

	copy(cut, sizeof(cut), text);
	for (i = 0; i < d->n_notices; i++)
		if (d->notices[i].kind == kind &&
		    strcmp(d->notices[i].text, cut) == 0)
			return &d->notices[i];
	if (d->notices == NULL)
		d->notices = calloc(DLQ_DIGEST_NOTICES, sizeof(*d->notices));
	if (d->notices == NULL || d->n_notices == DLQ_DIGEST_NOTICES) {
		d->notices_over[kind]++;
		return NULL;
	}
	n = &d->notices[d->n_notices++];
	n->kind = kind;
	n->count = 0;
	n->n_subjects = 0;
	copy(n->subject, sizeof(n->subject), subject);
	memcpy(n->text, cut, sizeof(cut));
	return n;
}

void
dlq_digest_notice(struct dlq_digest *d, enum dlq_notice_kind kind,
    const char *subject, const char *text)
{
	struct dlq_notice *n = find_notice(d, kind, subject, text);

	if (n == NULL)
		return;
	n->count++;
	if (subject != NULL && subject[0] != '\0')
		/* the subject alone, hashed as a signature is */
		count_subject(n, dlq_signature_hash(subject, "", "", ""));
}

void
dlq_digest_add_group(struct dlq_digest *d, const struct dlq_group *s)
{
	struct dlq_group *g;
	bool created;
	int k;

	d->total += s->count;
	if ((g = lookup(d, s->hash, &created)) == NULL) {
		count_other(d, s->hash, s->count);
		return;
	}
	if (created) {
		*g = *s;
		return;
	}
	g->count += s->count;
	g->is_new |= s->is_new;
	if (s->first_ms < g->first_ms)
		g->first_ms = s->first_ms;
	if (s->last_ms > g->last_ms)
		g->last_ms = s->last_ms;
	for (k = 0; k < s->n_samples; k++)
		add_sample(g, s->samples[k]);
}

void
dlq_digest_add_other(struct dlq_digest *d, uint64_t hash, uint64_t count)
{
	d->total += count;
	count_other(d, hash, count);
}

static void
merge_notice(struct dlq_digest *dst, const struct dlq_notice *s)
{
	struct dlq_notice *n = find_notice(dst, s->kind, s->subject, s->text);
	size_t i;

	if (n == NULL)
		return;
	n->count += s->count;
	for (i = 0; i < s->n_subjects; i++)
		count_subject(n, s->subjects[i]);
}

void
dlq_digest_merge(struct dlq_digest *dst, const struct dlq_digest *src)
{
	size_t i;
	int k;

	for (i = 0; i < src->n; i++)
		dlq_digest_add_group(dst, &src->groups[i]);
	dst->total += src->other_count;
	for (i = 0; i < src->n_other; i++)
		count_other(dst, src->other_hashes[i], 0);
	for (i = 0; i < src->n_notices; i++)
		merge_notice(dst, &src->notices[i]);
	for (k = 0; k < DLQ_NOTICE_KINDS; k++)
		dst->notices_over[k] += src->notices_over[k];
	dst->other_count += src->other_count;
}

/* Appends the character at `s` visibly when a chat would not show it as
 * written, and returns its bytes; returns 0 for any other. A control
 * character (C0, DEL, C1: an escape sequence, a bell) and an invisible
 * one (an override turns the rest of its line around so that it reads
 * as another text; a zero-width space makes two ids look alike) are
 * shown as \e, \xNN or \uNNNN; a line break or tab as a space (one line
 * per group). */
static size_t
add_hidden(struct dlq_buf *b, const unsigned char *s)
{
	char esc[DLQ_TERM_ESC_MAX];
	size_t n;

	if (s[0] == '\n' || s[0] == '\r' || s[0] == '\t')
		dlq_buf_addc(b, ' ');
	else if (s[0] == 0x1b)
		dlq_buf_adds(b, "\\e");
	else if (s[0] < 0x20 || s[0] == 0x7f)
		dlq_buf_printf(b, "\\x%02x", s[0]);
	else if (s[0] == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f)
		dlq_buf_printf(b, "\\u%04x", s[1]);
	else if ((n = dlq_term_invisible(s, esc)) > 0) {
		dlq_buf_adds(b, esc);
		return n;
	} else
		return 0;
	return s[0] < 0x80 ? 1 : 2;
}

/* Whether `name` (after an '@') pages everyone: "@channel", "@all",
 * "@here", "@everyone" (Mattermost, Rocket.Chat, Discord), or Zulip's
 * "@**all**". */
static bool
names_everyone(const char *name)
{
	static const char *const all[] = { "channel", "all", "here",
	    "everyone" };
	size_t i, n;

	if (name[0] == '*')
		return true;
	for (n = 0; isalnum((unsigned char)name[n]) || name[n] == '_' ||
	    name[n] == '-' || name[n] == '.'; n++)
		;
	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (strlen(all[i]) == n && strncasecmp(name, all[i], n) == 0)
			return true;
	return false;
}

/* Whether the '@' at `at` ends the user part of a URL's authority
 * ("redis://:***@cache", its password masked): between the "://" of its
 * word and it, no '/', '?' or '#'. */
static bool
in_url_authority(const char *start, const char *at)
{
	const char *word = at, *p;

	while (word > start && !isspace((unsigned char)word[-1]))
		word--;
	if ((p = memmem(word, (size_t)(at - word), "://", 3)) == NULL)
		return false;
	for (p += 3; p < at; p++)
		if (*p == '/' || *p == '?' || *p == '#')
			return false;
	return true;
}

/* Whether the '@' at `at` (in the text that starts at `start`) would
 * start a mention: Mattermost and Rocket.Chat page a whole channel for
 * "@channel", "@all" or "@here", and a person for "@name", in any text
 * a webhook posts; Zulip for "@**all**". An address ("ops@example.com")
 * mentions nobody: its '@' follows a letter. The '@' of a URL's user
 * part ("redis://:***@cache") stays as written unless it would page
 * everyone. */
static bool
starts_mention(const char *start, const char *at)
{
	unsigned char before = at > start ? (unsigned char)at[-1] : ' ';
	unsigned char after = (unsigned char)at[1];

	if (isalnum(before) || before == '_' ||
	    !(isalnum(after) || after == '_' || after == '*'))
		return false;
	return names_everyone(at + 1) || !in_url_authority(start, at);
}

/* Appends `s` escaped for the target's markup. Error texts come from
 * producers: "<!channel>" in one must not page a whole Slack channel,
 * nor "<users/all>" a Google Chat space, nor "@channel" or "<!channel>"
 * (Mattermost reads Slack's markup too) a Mattermost one. Google Chat
 * documents no escape for its <...> markup, nor Mattermost for its
 * mentions; a zero-width space after the '<' or '@' breaks them and
 * shows the same text. In Discord's Markdown "[x](url)" would hide a
 * link and "||x||" the text; a backslash shows such a character as it
 * is (mentions are off in the body, see webhook.h). */
static void
add_text(struct dlq_buf *b, enum dlq_alert_format f, const char *s)
{
	const char *start = s;
	size_t n;

	for (; *s != '\0'; s++) {
		if ((n = add_hidden(b, (const unsigned char *)s)) > 0)
			s += n - 1;
		else if (f != DLQ_FORMAT_DISCORD && *s == '@' &&
		    starts_mention(start, s))
			dlq_buf_adds(b, "@\u200b");
		else if (f == DLQ_FORMAT_PLAIN && *s == '<' && s[1] == '!')
			dlq_buf_adds(b, "<\u200b");
		else if (f == DLQ_FORMAT_GOOGLE_CHAT && *s == '<')
			dlq_buf_adds(b, "<\u200b");
		else if (f == DLQ_FORMAT_SLACK && *s == '&')
			dlq_buf_adds(b, "&amp;");
		else if (f == DLQ_FORMAT_SLACK && *s == '<')
			dlq_buf_adds(b, "&lt;");
		else if (f == DLQ_FORMAT_SLACK && *s == '>')
			dlq_buf_adds(b, "&gt;");
		else if (f == DLQ_FORMAT_DISCORD && strchr("\\*_~`|[]<>",
		    *s) != NULL) {
			dlq_buf_addc(b, '\\');
			dlq_buf_addc(b, *s);
		} else
			dlq_buf_addc(b, *s);
	}
}

void
dlq_digest_add_bold(struct dlq_buf *b, enum dlq_alert_format f,
    const char *s)
{
	const char *mark = f == DLQ_FORMAT_SLACK ||
	    f == DLQ_FORMAT_GOOGLE_CHAT ? "*" : f == DLQ_FORMAT_DISCORD ? "**" :
	    "";

	dlq_buf_adds(b, mark);
	add_text(b, f, s);
	dlq_buf_adds(b, mark);
}

static void
add_time(struct dlq_buf *b, int64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	char tmp[16];

	gmtime_r(&t, &tm);
	strftime(tmp, sizeof(tmp), "%H:%M:%SZ", &tm);
	dlq_buf_adds(b, tmp);
}

/* "• NEW *who* ×count reason/class: error (" */
static void
render_head(const struct dlq_group *g, bool is_new, const char *who,
    uint64_t count, enum dlq_alert_format f, struct dlq_buf *b)
{
	dlq_buf_adds(b, "• ");
	if (is_new)
		dlq_buf_adds(b, "NEW ");
	dlq_digest_add_bold(b, f, who);
	dlq_buf_adds(b, " ×");
	dlq_buf_add_u64(b, count);
	dlq_buf_addc(b, ' ');
	add_text(b, f, g->reason);
	if (g->class[0] != '\0') {
		dlq_buf_addc(b, '/');
		add_text(b, f, g->class);
	}
	dlq_buf_adds(b, ": ");
	add_text(b, f, g->error[0] ? g->error : DLQ_NO_ERROR_TEXT);
	dlq_buf_adds(b, " (");
}

/* "sample id, first–last" */
static void
render_seen(const char *sample, int64_t first_ms, int64_t last_ms,
    enum dlq_alert_format f, struct dlq_buf *b)
{
	if (sample != NULL) {
		dlq_buf_adds(b, "sample ");
		add_text(b, f, sample);
		dlq_buf_adds(b, ", ");
	}
	add_time(b, first_ms);
	if (last_ms / 1000 != first_ms / 1000) {
		dlq_buf_adds(b, "–");
		add_time(b, last_ms);
	}
}

/* `text` linked to the console's `url` + "/ops/dlq" + `query` (none
 * when `url` is NULL: `text` alone), in `f`'s link syntax. `url` and
 * `query` are URL text (no space, <, >, |, "); `text` is ours. */
static void
add_link(struct dlq_buf *b, enum dlq_alert_format f, const char *url,
    const char *query, const char *text)
{
	size_t n;

	if (url == NULL) {
		dlq_buf_adds(b, text);
		return;
	}
	n = strlen(url);
	while (n > 0 && url[n - 1] == '/')
		n--;
	switch (f) {
	case DLQ_FORMAT_SLACK:
	case DLQ_FORMAT_GOOGLE_CHAT:
		dlq_buf_addc(b, '<');
		dlq_buf_add(b, url, n);
		dlq_buf_printf(b, "/ops/dlq%s|%s>", query, text);
		break;
	case DLQ_FORMAT_DISCORD:
		dlq_buf_printf(b, "[%s](<", text);
		dlq_buf_add(b, url, n);
		dlq_buf_printf(b, "/ops/dlq%s>)", query);
		break;
	default:
		dlq_buf_printf(b, "%s ", text);
		dlq_buf_add(b, url, n);
		dlq_buf_printf(b, "/ops/dlq%s", query);
	}
}

/* "; next: STEP" for the group's class, and its link */
static void
render_next(const struct dlq_group *g, enum dlq_alert_format f,
    const char *url, const char *query, struct dlq_buf *b)
{
	const char *step = dlq_class_next_step(g->class);

	if (step != NULL) {
		dlq_buf_adds(b, "; next: ");
		add_text(b, f, step);
	}
	if (url != NULL) {
		dlq_buf_adds(b, " ");
		add_link(b, f, url, query, "open");
	}
}

static void
render_group(const struct dlq_group *g, enum dlq_alert_format f,
    const char *url, struct dlq_buf *b)
{
	char sig[DLQ_SIGNATURE_ID_LEN + 1], query[64];

	render_head(g, g->is_new, g->queue, g->count, f, b);
	render_seen(g->n_samples > 0 ? g->samples[0] : NULL, g->first_ms,
	    g->last_ms, f, b);
	dlq_signature_id(g->hash, sig);
	dlq_buf_adds(b, ", sig ");
	dlq_buf_adds(b, sig);
	dlq_buf_adds(b, ")");
	snprintf(query, sizeof(query), "?signature=%s", sig);
	render_next(g, f, url, query, b);
	dlq_buf_addc(b, '\n');
}

static int
by_count(const void *a, const void *b)
{
	const struct dlq_group *x = *(const struct dlq_group *const *)a;
	const struct dlq_group *y = *(const struct dlq_group *const *)b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return x->first_ms < y->first_ms ? -1 : x->first_ms > y->first_ms;
}

/* One cause: its groups, one per queue, are order[slots[first + k].pos]
 * for k < n, largest first. */
struct slot {
	uint64_t	 cause;
	size_t		 pos;		/* in order[] */
};

struct cause {
	size_t		 first, n;
	size_t		 lead;		/* its largest group's pos */
	uint64_t	 count;
	int64_t		 first_ms, last_ms;
	bool		 is_new;
};

static int
by_slot(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;

	if (x->cause != y->cause)
		return x->cause < y->cause ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int
by_cause_count(const void *a, const void *b)
{
	const struct cause *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	if (x->first_ms != y->first_ms)
		return x->first_ms < y->first_ms ? -1 : 1;
	return x->lead < y->lead ? -1 : x->lead > y->lead;
}

/* Gathers the groups, in order[] largest first, into causes, largest
 * first, and returns how many. A group whose cause is not known (0) is
 * a cause of its own. */
static size_t
gather_causes(const struct dlq_group *const *order, size_t n,
    struct slot *slots, struct cause *causes)
{
	const struct dlq_group *g;
	struct cause *c = NULL;
	size_t i, nc = 0;

	for (i = 0; i < n; i++) {
		slots[i].cause = order[i]->cause;
		slots[i].pos = i;
	}
	qsort(slots, n, sizeof(*slots), by_slot);
	for (i = 0; i < n; i++) {
		g = order[slots[i].pos];
		if (c == NULL || slots[i].cause == 0 ||
		    slots[i].cause != slots[i - 1].cause) {
			c = &causes[nc++];
			memset(c, 0, sizeof(*c));
			c->first = i;
			c->lead = slots[i].pos;
			c->first_ms = g->first_ms;
			c->last_ms = g->last_ms;
		}
		c->n++;
		c->count += g->count;
		c->is_new |= g->is_new;
		if (g->first_ms < c->first_ms)
			c->first_ms = g->first_ms;
		if (g->last_ms > c->last_ms)
			c->last_ms = g->last_ms;
	}
	qsort(causes, nc, sizeof(*causes), by_cause_count);
	return nc;
}

/* "• NEW *3 queues* ×1000 reason/class: error (q1 ×500, q2 ×300, q3
 * ×200; sample id, first–last)": the signatures are one per queue,
 * `dlqctl groups --by-cause` lists them under the cause (causes.c). */
static void
render_cause(const struct cause *c, const struct dlq_group *const *order,
    const struct slot *slots, enum dlq_alert_format f, const char *url,
    struct dlq_buf *b)
{
	const struct dlq_group *g, *lead = order[c->lead];
	const char *sample = NULL;
	char who[32];
	size_t k;

	snprintf(who, sizeof(who), "%zu queues", c->n);
	render_head(lead, c->is_new, who, c->count, f, b);
	for (k = 0; k < c->n; k++) {
		g = order[slots[c->first + k].pos];
		if (sample == NULL && g->n_samples > 0)
			sample = g->samples[0];
		if (k >= DIGEST_CAUSE_QUEUES)
			continue;
		if (k > 0)
			dlq_buf_adds(b, ", ");
		add_text(b, f, g->queue);
		dlq_buf_adds(b, " ×");
		dlq_buf_add_u64(b, g->count);
	}
	if (c->n > DIGEST_CAUSE_QUEUES)
		dlq_buf_printf(b, " and %zu more", c->n - DIGEST_CAUSE_QUEUES);
	dlq_buf_adds(b, "; ");
	render_seen(sample, c->first_ms, c->last_ms, f, b);
	dlq_buf_adds(b, ")");
	render_next(lead, f, url, "?view=causes", b);
	dlq_buf_addc(b, '\n');
}

/* "• text (subject and N more)", "• text (×N)" */
static void
render_notice(const struct dlq_notice *n, enum dlq_alert_format f,
    struct dlq_buf *out)
{
	dlq_buf_adds(out, "• ");
	add_text(out, f, n->text);
	if (n->subject[0] != '\0') {
		dlq_buf_adds(out, " (");
		add_text(out, f, n->subject);
		if (n->n_subjects == DLQ_NOTICE_SUBJECTS)
			dlq_buf_printf(out, " and at least %zu more",
			    n->n_subjects - 1);
		else if (n->n_subjects > 1)
			dlq_buf_printf(out, " and %zu more",
			    n->n_subjects - 1);
		dlq_buf_addc(out, ')');
	} else if (n->count > 1)
		dlq_buf_printf(out, " (×%llu)", (unsigned long long)n->count);
	dlq_buf_addc(out, '\n');
}

/* The notice sections, each with its title, up to `end` bytes of `out`. */
static void
render_notices(const struct dlq_digest *d, enum dlq_alert_format f,
    size_t end, struct dlq_buf *out)
{
	static const char *const titles[DLQ_NOTICE_KINDS] = {
		"Archive not writable", "DLQ missing", "DLQ shared",
		"Threshold crossed", "Needs a decision", "Automatic redrive" };
	size_t i, mark;
	uint64_t shown, total;
	int k;

	for (k = 0; k < DLQ_NOTICE_KINDS; k++) {
		total = d->notices_over[k];
		for (i = 0; i < d->n_notices; i++)
			total += d->notices[i].kind == (enum dlq_notice_kind)k;
		if (total == 0)
			continue;
		dlq_digest_add_bold(out, f, titles[k]);
		dlq_buf_addc(out, '\n');
		shown = 0;
		for (i = 0; i < d->n_notices; i++) {
			if (d->notices[i].kind != (enum dlq_notice_kind)k)
				continue;
			mark = out->len;
			render_notice(&d->notices[i], f, out);
			if (out->len + FOOTER_RESERVE > end) {
				out->len = mark;
				out->data[mark] = '\0';
				break;
			}
			shown++;
		}
		if (total > shown)
			dlq_buf_printf(out, "… and %llu more\n",
			    (unsigned long long)(total - shown));
	}
}

/* The longest prefix of a rendered line within `n` bytes that cuts
 * neither a UTF-8 character nor an escape: Slack's "&amp;" (a cut "&am"
 * would show as is) or Discord's backslash (a dangling one would escape
 * the "…" that follows). */
static size_t
whole_prefix(const char *s, size_t n, enum dlq_alert_format f)
{
	size_t i, run = 0;

	n = dlq_utf8_prefix(s, n);
	if (f == DLQ_FORMAT_SLACK) {
		for (i = n; i > 0 && s[i - 1] != ';'; i--)
			if (s[i - 1] == '&')
				return i - 1;
	} else if (f == DLQ_FORMAT_DISCORD) {
		while (run < n && s[n - 1 - run] == '\\')
			run++;
		if (run % 2 == 1)
			n--;
	}
	return n;
}

void
dlq_digest_render(const struct dlq_digest *d, enum dlq_alert_format f,
    const char *title, size_t max_bytes, struct dlq_buf *out)
{
	dlq_digest_render_linked(d, f, title, NULL, max_bytes, out);
}

void
dlq_digest_render_linked(const struct dlq_digest *d, enum dlq_alert_format f,
    const char *title, const char *url, size_t max_bytes, struct dlq_buf *out)
{
	const struct dlq_group **order;
	struct slot *slots;
	struct cause *causes;
	struct dlq_buf line;
	size_t start = out->len, i, nc = 0, shown = 0, n = d->n ? d->n : 1;
	uint64_t rest;

	if (f == DLQ_FORMAT_DISCORD && max_bytes > DISCORD_MAX_BYTES)
		max_bytes = DISCORD_MAX_BYTES;
	dlq_buf_init(&line);
	dlq_digest_add_bold(out, f, title);
	if (url != NULL) {
		dlq_buf_addc(out, ' ');
		add_link(out, f, url, "", "console");
	}
	if (d->total > 0 || d->n_notices == 0)
		dlq_buf_printf(out, ": %llu dead letter%s in %zu group%s\n",
		    (unsigned long long)d->total, d->total == 1 ? "" : "s",
		    dlq_digest_groups(d), dlq_digest_groups(d) == 1 ? "" : "s");
	else
		dlq_buf_adds(out, ": no new dead letters\n");
	/* the sections take at most half of the room: groups keep theirs */
	render_notices(d, f, start + max_bytes / 2, out);
	order = malloc(n * sizeof(*order));
	slots = malloc(n * sizeof(*slots));
	causes = malloc(n * sizeof(*causes));
	if (order != NULL && slots != NULL && causes != NULL) {
		for (i = 0; i < d->n; i++)
			order[i] = &d->groups[i];
		qsort(order, d->n, sizeof(*order), by_count);
		nc = gather_causes(order, d->n, slots, causes);
	}
	rest = d->total;
	for (i = 0; i < nc; i++) {
		dlq_buf_reset(&line);
		if (causes[i].n == 1)
			render_group(order[causes[i].lead], f, url, &line);
		else
			render_cause(&causes[i], order, slots, f, url, &line);
		if (out->len - start + line.len + FOOTER_RESERVE > max_bytes) {
			if (shown > 0)
				break;
			/* even the largest line is too long: cut it */
			line.len = whole_prefix(line.data,
			    max_bytes - FOOTER_RESERVE - (out->len - start) - 4,
			    f);
			dlq_buf_add(out, line.data, line.len);
			dlq_buf_adds(out, "…\n");
		} else
			dlq_buf_add(out, line.data, line.len);
		rest -= causes[i].count;
		shown += causes[i].n;
	}
	if (dlq_digest_groups(d) > shown)
		dlq_buf_printf(out, "… and %zu more group%s (%llu dead letter%s)\n",
		    dlq_digest_groups(d) - shown,
		    dlq_digest_groups(d) - shown == 1 ? "" : "s",
		    (unsigned long long)rest, rest == 1 ? "" : "s");
	if (out->len > start && out->data[out->len - 1] == '\n')
		out->data[--out->len] = '\0';
	free(order);
	free(slots);
	free(causes);
	dlq_buf_release(&line);
}

void
dlq_digest_title(char *out, size_t n, const char *what)
{
	char host[64];

	if (gethostname(host, sizeof(host)) != 0)
		snprintf(host, sizeof(host), "?");
	host[sizeof(host) - 1] = '\0';
	snprintf(out, n, "%sdlq-monitor on %s", what, host);
}
