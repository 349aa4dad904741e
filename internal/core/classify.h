/* classify.h - error class and "how to fix" hint of a dead letter.
 *
 * Ordered rules, first match wins: the configured rules (classify.rules)
 * before the built-in ones. A rule matches on any of: a regular expression
 * on the error text, the death reason, a regular expression on the source
 * queue. The class decides owner and whether replay is allowed; the hint
 * tells the operator what to check first. Compiled once; dlq_classify()
 * may be called from any thread. */
#ifndef DLQ_CLASSIFY_H
#define DLQ_CLASSIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "config.h"

struct dlq_classifier;

struct dlq_classification {
	const char	*class;		/* static or owned by the classifier */
	const char	*hint;
	const char	*link;		/* NULL: none */
};

/* NULL on error, with "file:line: message" lines in `errors`. */
struct dlq_classifier *dlq_classify_new(const struct dlq_config *,
	    struct dlq_buf *errors);
void	dlq_classify_free(struct dlq_classifier *);	/* NULL ok */

/* A fingerprint of the rules in effect, configured then built-in (what
 * each matches on, its class and its hint): records classified under
 * other rules may class otherwise now (classrefresh.c). */
uint64_t dlq_classify_rules_hash(const struct dlq_classifier *);

void	dlq_classify(const struct dlq_classifier *, const char *queue,
	    const char *reason, const char *error,
	    struct dlq_classification *out);

#endif
