/* ctlselect.h - dlqctl's changes by selection: `drop --queue Q ...`,
 * `assign --queue Q ...` and `reopen --queue Q ...` list the records of
 * the selection through the worker, then change them in requests of a
 * few hundred ids, each audited with its ids as a request naming them
 * would be. */
#ifndef DLQ_CTLSELECT_H
#define DLQ_CTLSELECT_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "proto.h"

/* Records a run takes at most (what one list answers). */
#define DLQ_SELECT_MAX	DLQ_CONTROL_LIST_MAX

/* Runs `cmd` ("drop", "assign" or "reopen") over the selection in `r`
 * (its "queue", "class", "signature", "since_ms", "limit"; "yes" to do
 * it): drop takes the open and assigned records, assign the open ones,
 * reopen the discarded ones. Each request carries the options of `r`
 * named in `copy`. Without "yes" it says on stderr how many it would
 * change (exit 2). Prints the summary
 * (`verb` N, the refused ones, whether more may match), as JSON with
 * `json`. Returns the exit code. */
int	dlq_select_change(const char *socket, bool json, const cJSON *r,
	    const char *cmd, const char *const *copy, const char *verb);

#endif
