/* tcpprobe.h - say why a TCP connection to a broker's port failed.
 *
 * rabbitmq-c reports every failed connect as "a socket error occurred":
 * it reads the connect's outcome with SO_ERROR and drops it, and errno
 * is left at EINPROGRESS. An operator at 3 a.m. needs to tell "nothing
 * listens there" (the broker is down, or the port is wrong) from "no
 * route to host" (network, firewall). Only after a failure, so the cost
 * of a second connect is paid on the error path alone. */
#ifndef DLQ_TCPPROBE_H
#define DLQ_TCPPROBE_H

#include <stddef.h>

/* Connects to `host`:`port` (every address the name resolves to, in
 * turn, each given at most `timeout_ms`) and closes at once. Returns 0
 * when one took the connection, else the errno of the last address tried
 * (ETIMEDOUT when it did not answer in time; EHOSTUNREACH when the name
 * does not resolve). */
int	dlq_tcp_probe(const char *host, int port, int timeout_ms);

/* What the errno of a failed connect means to someone starting a broker
 * client, e.g. "connection refused (nothing listens on that port: is the
 * broker running, and is this its port?)"; an errno without its own
 * words is strerror's, written into `buf` (`n` bytes). Never NULL. */
const char *dlq_tcp_probe_text(int err, char *buf, size_t n);

#endif
