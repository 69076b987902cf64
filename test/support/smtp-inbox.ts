import { type ParsedMail, simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

/**
 * A real SMTP server (the `smtp-server` package) on a free port of 127.0.0.1 that keeps every message it is given,
 * parsed by `mailparser`: what the service's mail would deliver, read as a mail client would.
 */
export class SmtpInbox {
  readonly messages: ParsedMail[] = [];
  private readonly waiting: { to: string; done: (mail: ParsedMail) => void }[] = [];
  private readonly server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData: (stream, _session, callback) => {
      simpleParser(stream)
        .then((mail) => {
          this.messages.push(mail);
          for (const wait of this.waiting.filter((w) => recipients(mail).includes(w.to))) wait.done(mail);
          callback();
        })
        .catch((error: Error) => callback(error));
    },
  });
  port = 0;

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.server.address() as { port: number }).port;
  }

  get url(): string {
    return `smtp://127.0.0.1:${this.port}`;
  }

  /** The next message to `to` (one already delivered and not yet taken counts). */
  next(to: string): Promise<ParsedMail> {
    const delivered = this.messages.findIndex((mail) => recipients(mail).includes(to));
    if (delivered >= 0) return Promise.resolve(this.messages.splice(delivered, 1)[0]);
    return new Promise((done) =>
      this.waiting.push({
        to,
        done: (mail) => {
          this.messages.splice(this.messages.indexOf(mail), 1);
          this.waiting.splice(
            this.waiting.findIndex((w) => w.to === to),
            1,
          );
          done(mail);
        },
      }),
    );
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(resolve));
  }
}

function recipients(mail: ParsedMail): string[] {
  const to = Array.isArray(mail.to) ? mail.to : mail.to ? [mail.to] : [];
  return to.flatMap((address) => address.value.map((entry) => entry.address ?? ''));
}
