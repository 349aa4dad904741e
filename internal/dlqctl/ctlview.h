/* ctlview.h - dlqctl's human output of control answers (--json prints
 * the answer's data as it came). Times are shown relative to now. */
#ifndef DLQ_CTLVIEW_H
#define DLQ_CTLVIEW_H

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>

void	dlq_view_list(FILE *, const cJSON *data, int64_t now_ms);
void	dlq_view_show(FILE *, const cJSON *data, int64_t now_ms);
void	dlq_view_stats(FILE *, const cJSON *data);
void	dlq_view_groups(FILE *, const cJSON *data, int64_t now_ms);
/* groups --by-cause: each cause, then its queues' groups. */
void	dlq_view_causes(FILE *, const cJSON *data, int64_t now_ms);
void	dlq_view_changes(FILE *, const cJSON *data, const char *verb);
void	dlq_view_audit(FILE *, const cJSON *data, int64_t now_ms);

/* Redrive per configured queue: circuit, published, left for humans. */
void	dlq_view_redrive(FILE *, const cJSON *data, int64_t now);

#endif
