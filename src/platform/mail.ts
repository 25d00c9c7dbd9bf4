// Outgoing mail through the SMTP server SMTP_URL names (nodemailer): plain-text messages the service sends on someone's
// behalf (a member's invitation). Short timeouts: the request that sends waits for the server's answer, and a mail
// server that does not answer must not hold a page for minutes (nodemailer's defaults); the caller then falls back.
import { createTransport } from 'nodemailer';

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  /** Resolves once the server accepted the message; rejects when it refused it or could not be reached. */
  send(mail: Mail): Promise<void>;
}

export function smtpMailer(url: string, from: string): Mailer {
  const transport = createTransport({
    url,
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 20_000,
  });
  return {
    async send(mail) {
      await transport.sendMail({ from, to: mail.to, subject: mail.subject, text: mail.text });
    },
  };
}
