/* digest.h - pending alerts grouped by failure signature, and the digest
 * text built from them.
 *
 * A flood of 100 000 dead letters is a few groups: each group keeps a
 * count, first/last seen and up to three sample message ids. The table is
 * bounded (`max_groups`); what does not fit is counted as "other", so
 * memory never grows with the flood. Pure: no locks, no I/O; alert.c
 * holds the lock. */
#ifndef DLQ_DIGEST_H
#define DLQ_DIGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "config.h"
#include "signature.h"

#define DLQ_DIGEST_SAMPLES	3
#define DLQ_DIGEST_OTHER_MAX	256	/* distinct "other" signatures counted */

/* One dead letter as the alert path sees it; strings are borrowed. */
struct dlq_alert_event {
	uint64_t	 hash;		/* dlq_signature_hash(), of the
					 * normalised error text */
	const char	*queue;
	const char	*reason;	/* x-death reason, "unknown" if none */
	const char	*class;		/* error class, "" if not known */
	const char	*error;		/* redacted; "" if none */
	const char	*message_id;	/* NULL: none */
	int64_t		 at_ms;		/* wall clock */
	const char	*normalized;	/* the error text hashed; NULL: not
					 * known */
};

struct dlq_group {
	uint64_t	 hash;
	uint64_t	 cause;		/* the same hash with the queue "": one
					 * cause in several queues; 0: not
					 * known */
	uint64_t	 count;
	int64_t		 first_ms;
	int64_t		 last_ms;
	bool		 is_new;	/* signature not archived before */
	int		 n_samples;
	char		 queue[256];
	char		 reason[24];
	char		 class[16];
	char		 error[DLQ_SIGNATURE_TEXT_MAX + 1];	/* the first
					 * dead letter's, cut with "…" */
	char		 samples[DLQ_DIGEST_SAMPLES][64];
};

/* A notice is not a dead letter: an archive that paused consumers, a
 * DLQ missing or consumed by others too, a threshold crossed, a case
 * needing a decision, or what the automatic redrive did. Each kind
 * renders as its own section, before the groups, so it survives the
 * length limit. The same text of a kind given again is one notice with a
 * count (an archive outage told by every DLQ it paused). */
enum dlq_notice_kind { DLQ_NOTICE_ARCHIVE, DLQ_NOTICE_MISSING,
	DLQ_NOTICE_SHARED, DLQ_NOTICE_THRESHOLD, DLQ_NOTICE_ESCALATION,
	DLQ_NOTICE_REDRIVE, DLQ_NOTICE_KINDS };
#define DLQ_DIGEST_NOTICES	24	/* kept; more are counted */
#define DLQ_NOTICE_TEXT_MAX	400
#define DLQ_NOTICE_SUBJECTS	256	/* distinct subjects counted */

struct dlq_notice {
	enum dlq_notice_kind kind;
	uint64_t	 count;		/* times given */
	char		 subject[256];	/* the first one's; "" if none */
	/* the distinct subjects, by hash: a DLQ that tells the same again
	 * (a second outage in the window) is not one more DLQ */
	uint64_t	 subjects[DLQ_NOTICE_SUBJECTS];
	size_t		 n_subjects;	/* saturates */
	char		 text[DLQ_NOTICE_TEXT_MAX];
};

struct dlq_digest {
	struct dlq_group *groups;
	size_t		  n, cap;
	uint32_t	 *index;	/* open addressing: group index + 1 */
	size_t		  index_cap;
	uint64_t	  total;	/* dead letters, other included */
	uint64_t	  other_count;	/* dead letters of groups over cap */
	uint64_t	  other_hashes[DLQ_DIGEST_OTHER_MAX];
	size_t		  n_other;	/* distinct other groups (saturates) */
	struct dlq_notice *notices;	/* allocated on the first one */
	size_t		  n_notices;
	uint64_t	  notices_over[DLQ_NOTICE_KINDS];	/* not kept */
};

int	dlq_digest_init(struct dlq_digest *, size_t max_groups);	/* 0/-1 */
void	dlq_digest_release(struct dlq_digest *);
void	dlq_digest_clear(struct dlq_digest *);
bool	dlq_digest_empty(const struct dlq_digest *);
size_t	dlq_digest_groups(const struct dlq_digest *);	/* other included */

void	dlq_digest_add(struct dlq_digest *, const struct dlq_alert_event *,
	    bool is_new);
/* Adds a notice (text copied; cut at DLQ_NOTICE_TEXT_MAX) about
 * `subject` (a DLQ, a queue; NULL: none), or counts it again (and its
 * subject, when new to it) when the kind already has that text. */
void	dlq_digest_notice(struct dlq_digest *, enum dlq_notice_kind,
	    const char *subject, const char *text);

/* Adds a group (counted, first/last seen, samples) as if its dead
 * letters were added one by one. */
void	dlq_digest_add_group(struct dlq_digest *, const struct dlq_group *);
/* Counts `count` dead letters of signature `hash` as "other" (a group
 * not shown, as if over the limit). */
void	dlq_digest_add_other(struct dlq_digest *, uint64_t hash,
	    uint64_t count);
/* The group's error text: `error`, cut with "…" where it is too long. */
void	dlq_group_set_error(struct dlq_group *, const char *error);

/* Adds every group of `src` to `dst` (counts merged, never dropped). */
void	dlq_digest_merge(struct dlq_digest *dst, const struct dlq_digest *src);

/* Appends the digest text for `format`: a title line, the notice
 * sections ("Archive not writable", "DLQ missing", "DLQ shared",
 * "Threshold crossed", "Needs a decision", "Automatic redrive"; a notice
 * given about more than one subject says "(subject and N more)", one
 * given more than once without a subject "(×N)"), then one line per
 * group, or per cause for the groups of one cause in several queues,
 * largest first, then "… and N more groups (M dead letters)";
 * never more than `max_bytes` (for Discord 2 000 at most). Times are
 * UTC. */
void	dlq_digest_render(const struct dlq_digest *, enum dlq_alert_format,
	    const char *title, size_t max_bytes, struct dlq_buf *out);

/* The same with links into the console at `url` (console.public_url;
 * NULL: none): the title's to the overview, each group's to its
 * signature's dead letters, each cause's to the groups by cause. */
void	dlq_digest_render_linked(const struct dlq_digest *,
	    enum dlq_alert_format, const char *title, const char *url,
	    size_t max_bytes, struct dlq_buf *out);

/* Appends `s` in bold for `format` (as is in plain text), escaped as
 * group texts are. */
void	dlq_digest_add_bold(struct dlq_buf *, enum dlq_alert_format,
	    const char *s);

/* A digest's title: `what` (such as "TEST ") then "dlq-monitor on HOST". */
void	dlq_digest_title(char *out, size_t n, const char *what);

#endif
