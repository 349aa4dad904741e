/* metrics.h - counters and gauges the worker exposes on /metrics.
 *
 * Written from any thread (atomics, or a mutex around the small labelled
 * tables), read by the HTTP thread when Prometheus scrapes. What lives in
 * the archive (unresolved cases, ages, replays) is not counted here but
 * queried at scrape time, so it survives restarts. */
#ifndef DLQ_METRICS_H
#define DLQ_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* A replica of a shared archive: the process's own series carry its
 * name as label `replica`, and dlq_leader says whether it leads. Before
 * the first scrape. */
void	dlq_metrics_replica(const char *name);
void	dlq_metrics_dead_letters(const char *dlq, const char *reason,
	    const char *class, uint64_t n);
void	dlq_metrics_acked(uint64_t n);
void	dlq_metrics_reconnect(const char *dlq);
void	dlq_metrics_commit(double seconds);
void	dlq_metrics_alert(const char *target, bool sent);
void	dlq_metrics_consumer(const char *dlq, bool up);
/* How many other consumers the broker last said the DLQ has. */
void	dlq_metrics_consumer_others(const char *dlq, uint32_t others);
void	dlq_metrics_topology(bool asserted);
/* A control request refused for want of a role. */
void	dlq_metrics_control_refused(void);
/* A consumer's archive writes fail (`error`: why) or work again (NULL). */
void	dlq_metrics_archive(const char *dlq, const char *error);
/* Whether a consumer's archive writes fail now, and the last reason
 * given into `out`. */
bool	dlq_metrics_archive_error(char *out, size_t n);

/* The broker cannot be reached at start (`error`: why), or it can
 * (NULL). */
void	dlq_metrics_broker(const char *error);
/* Whether it could not, and why into `out`. */
bool	dlq_metrics_broker_error(char *out, size_t n);

/* Readiness inputs. */
bool	dlq_metrics_topology_asserted(void);
/* Consumers not connected, comma separated, into `out`; their number. */
int	dlq_metrics_consumers_down(struct dlq_buf *out);

/* Appends the in-memory metrics in Prometheus text format. */
void	dlq_metrics_render(struct dlq_buf *);

/* Appends a label value escaped per the exposition format (\\, \", \n). */
void	dlq_metrics_label(struct dlq_buf *, const char *);

#endif
