import { Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import type { Transporter } from 'nodemailer';
import { MailConfig } from './mail.config';

/** A message to one person: plain text (no HTML to escape, nothing a mail client loads). */
export interface Mail {
  to: string;
  subject: string;
  text: string;
}

/** Sends mail over SMTP through nodemailer; without `SMTP_URL` in development, logs it instead. */
@Injectable()
export class Mailer implements OnModuleDestroy {
  private readonly logger = new Logger(Mailer.name);
  /** Made at the first message: nodemailer costs about 20 MB of memory, which an instance that sends none keeps. */
  private transport: Promise<Transporter> | undefined;

  constructor(private readonly config: MailConfig) {}

  /** Whether mail goes out at all (see MailConfig). */
  get available(): boolean {
    return this.config.available;
  }

  async send(mail: Mail): Promise<void> {
    const { smtpUrl, from } = this.config;
    if (smtpUrl) {
      this.transport ??= import('nodemailer').then(({ createTransport }) => createTransport(smtpUrl, { from }));
      await (await this.transport).sendMail({ from, to: mail.to, subject: mail.subject, text: mail.text });
      return;
    }
    if (!this.config.logInstead) throw new Error('mail is not configured (SMTP_URL)');
    // Development only, where no server is set: the message (a reset link included) is how the developer gets it.
    this.logger.log(`mail to ${mail.to}: ${mail.subject}\n${mail.text}`);
  }

  async onModuleDestroy(): Promise<void> {
    (await this.transport)?.close();
  }
}
