/* alerttest.h - dlqctl test-alert. */
#ifndef DLQ_ALERTTEST_H
#define DLQ_ALERTTEST_H

#include <stdio.h>

#include "config.h"

/* Sends a clearly marked test digest to every target now and prints one
 * line per target with its HTTP status to `out`. Returns how many failed. */
int	dlq_alert_test(const struct dlq_config *c, FILE *out);

#endif
