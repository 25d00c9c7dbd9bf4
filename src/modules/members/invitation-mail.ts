// The email an invitation is sent as when a mail server is configured (SMTP_URL): plain text with the one-time link,
// who invited whom to which workspace with which role, and until when the link works.
import type { Mail } from '../../platform/mail.js';
import type { Role } from './members.repository.js';

export function invitationMail(i: {
  to: string;
  link: string;
  role: Role;
  workspaceName: string;
  invitedBy: string | null;
  expiresAt: Date;
}): Mail {
  const who = i.invitedBy === null ? 'You are invited' : `${i.invitedBy} invited you`;
  return {
    to: i.to,
    subject: `You are invited to ${i.workspaceName} on the payments dashboard`,
    text: [
      `${who} to the dashboard of ${i.workspaceName}, with the role ${i.role}.`,
      '',
      'Open this link and choose a password to join:',
      i.link,
      '',
      `The link works once, until ${i.expiresAt.toISOString().replace('T', ' ').slice(0, 16)} UTC.`,
      'If you did not expect this invitation, ignore this message.',
      '',
    ].join('\n'),
  };
}
