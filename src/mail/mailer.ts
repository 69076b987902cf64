import { Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { createTransport, type Transporter } from 'nodemailer';
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
  private readonly transport: Transporter | undefined;

  constructor(private readonly config: MailConfig) {
    this.transport = config.smtpUrl ? createTransport(config.smtpUrl, { from: config.from }) : undefined;
  }

  /** Whether mail goes out at all (see MailConfig). */
  get available(): boolean {
    return this.config.available;
  }

  async send(mail: Mail): Promise<void> {
    if (this.transport) {
      await this.transport.sendMail({ from: this.config.from, to: mail.to, subject: mail.subject, text: mail.text });
      return;
    }
    if (!this.config.logInstead) throw new Error('mail is not configured (SMTP_URL)');
    // Development only, where no server is set: the message (a reset link included) is how the developer gets it.
    this.logger.log(`mail to ${mail.to}: ${mail.subject}\n${mail.text}`);
  }

  onModuleDestroy(): void {
    this.transport?.close();
  }
}
