import { Module } from '@nestjs/common';
import { AppConfigModule } from '../config/config.module';
import { MailConfig } from './mail.config';
import { Mailer } from './mailer';

/** Outgoing mail (SMTP through nodemailer), for the modules that write to people. */
@Module({
  imports: [AppConfigModule.forFeature(MailConfig)],
  providers: [Mailer],
  exports: [Mailer],
})
export class MailModule {}
