import type { OrderStatus } from '../orders/order.entity';
import type { Gender } from '../users/user.entity';

export interface SamplePerson {
  name: string;
  email: string;
  gender: Gender;
  age: number;
  orders: { item: string; quantity: number; unitPriceCents: number; status: OrderStatus }[];
}

const NAMES: Record<Gender, string[]> = {
  female: ['Ada', 'Beatriz', 'Chiara', 'Dagny', 'Eun-ji', 'Fatima', 'Grace', 'Hanna', 'Ines', 'Jana', 'Kiri', 'Lucia'],
  male: ['Amir', 'Bruno', 'Carlos', 'Dmitri', 'Emeka', 'Felix', 'Goran', 'Hiroshi', 'Ivan', 'Jonas', 'Kofi', 'Luca'],
  other: ['Alex', 'Blair', 'Casey', 'Devon', 'Eden', 'Finley', 'Gray', 'Harper', 'Indigo', 'Jules', 'Kai', 'Lane'],
};
const SURNAMES = ['Lovelace', 'Okafor', 'Rossi', 'Nakamura', 'Silva', 'Novak', 'Haddad', 'Kim', 'Moreau', 'Larsen', 'Mensah', 'Weber'];
const ITEMS: [string, number][] = [
  ['Notebook', 450],
  ['Desk lamp', 3_990],
  ['Headphones', 8_900],
  ['Coffee beans 1 kg', 2_450],
  ['Keyboard', 6_490],
  ['Backpack', 5_900],
];
const STATUSES: OrderStatus[] = ['pending', 'paid', 'shipped', 'cancelled'];

/**
 * A dozen people of each gender, of ages spread from 19 to 74, with one to three orders each: enough for
 * `GET /users?gender=female&sort=age&order=desc` and the orders routes to show something. Deterministic, so the
 * demo looks the same on every machine.
 */
export function samplePeople(): SamplePerson[] {
  const people: SamplePerson[] = [];
  for (const [g, gender] of (['female', 'male', 'other'] as const).entries()) {
    NAMES[gender].forEach((first, i) => {
      const surname = SURNAMES[(i + g * 5) % SURNAMES.length];
      const orders = Array.from({ length: 1 + ((i + g) % 3) }, (_, k) => {
        const [item, unitPriceCents] = ITEMS[(i * 2 + k + g) % ITEMS.length];
        return { item, quantity: 1 + ((i + k) % 3), unitPriceCents, status: STATUSES[(i + k + g) % STATUSES.length] };
      });
      people.push({
        name: `${first} ${surname}`,
        email: `${first.toLowerCase().replace(/[^a-z]/g, '')}.${surname.toLowerCase()}@example.com`,
        gender,
        age: 19 + ((i * 5 + g * 3) % 56),
        orders,
      });
    });
  }
  return people;
}
