/*
 * notify.h - telling the service manager how the process is doing
 * (systemd's sd_notify: Type=notify in docs/unreadd.service): READY=1 once
 * start-up recovery is done and the port listens, STOPPING=1 when
 * shutdown begins. Without libsystemd at build time, or when not started
 * by systemd (no NOTIFY_SOCKET), these do nothing.
 */
#ifndef UNREADD_NOTIFY_H
#define UNREADD_NOTIFY_H

/* The data is loaded and the server accepts connections. */
void notify_ready(const char *status);

/* Shutdown began (the final snapshot follows). */
void notify_stopping(void);

#endif
