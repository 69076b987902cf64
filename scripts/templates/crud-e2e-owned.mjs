// The e2e tests of an `--owned` module's records: another person's are 404, an administrator reaches them, and they
// go with their person (a part of crud-e2e-spec.mjs).

export const ownedRecordsSpec = (n) => `
  describe('owned records', () => {
    it("shows another person none of one's ${n.plural.replace(/-/g, ' ')}, and answers 404 to their GET, PUT and DELETE, changing nothing", async () => {
      const mine = await create({ description: 'mine' });
      const path = \`/${n.plural}/\${mine.id}\`;
      const theirs = await t.http().get('/${n.plural}?limit=100').set(...bearer(other));
      expect(theirs.status).toBe(200);
      expect(theirs.body.data.map((row: { id: string }) => row.id)).not.toContain(mine.id);
      for (const attempt of [
        t.http().get(path).set(...bearer(other)),
        t.http().put(path).set(...bearer(other)).send({ name: uniqueName('taken-over') }),
        t.http().delete(path).set(...bearer(other)),
      ]) {
        const answer = await attempt;
        expectProblem(answer, 404, path);
        expect(answer.body.type).toBe('urn:problem-type:${n.singular}-not-found');
      }
      expect((await t.http().get(path).set(...bearer(reader))).body).toEqual(mine);
    });

    it('lists only the caller\\'s own, and lets two people use the same name', async () => {
      const mine = await create();
      const same = await t.http().post('/${n.plural}').set(...bearer(other)).send({ name: mine.name });
      expect(same.status, JSON.stringify(same.body)).toBe(201);
      expect(same.body.ownerId).not.toBe(ownerId);
      const list = await t.http().get('/${n.plural}?limit=100').set(...bearer(reader));
      expect(list.body.data.length).toBeGreaterThan(0);
      for (const row of list.body.data as { ownerId: string }[]) expect(row.ownerId).toBe(ownerId);
    });

    it("lets an administrator list, read, change and delete anyone's, the owner staying the owner", async () => {
      const mine = await create();
      const path = \`/${n.plural}/\${mine.id}\`;
      const all = await t.http().get('/${n.plural}?sort=createdAt&order=desc&limit=10').set(...bearer(adminToken));
      expect(all.body.data.map((row: { id: string }) => row.id)).toContain(mine.id);
      expect((await t.http().get(path).set(...bearer(adminToken))).body).toEqual(mine);
      const renamed = await t.http().put(path).set(...bearer(adminToken)).send({ name: uniqueName('by-admin') });
      expect(renamed.status).toBe(200);
      expect(renamed.body.ownerId).toBe(ownerId);
      expect((await t.http().delete(path).set(...bearer(adminToken))).status).toBe(204);
      expectProblem(await t.http().get(path).set(...bearer(reader)), 404, path);
    });

    it("deletes a person's ${n.plural.replace(/-/g, ' ')} with the person, and no one else's", async () => {
      const leaving = await t.createUser();
      const leaver = await t.token(leaving.id, [${n.Plural}Scope.read, ${n.Plural}Scope.write]);
      const paths: string[] = [];
      for (const name of [uniqueName('leaving'), uniqueName('leaving')]) {
        const res = await t.http().post('/${n.plural}').set(...bearer(leaver)).send({ name });
        expect(res.status, JSON.stringify(res.body)).toBe(201);
        paths.push(res.headers.location as string);
      }
      const kept = await create();
      const rows = t.app.get(DataSource).getRepository(${n.Singular});
      expect(await rows.countBy({ ownerId: leaving.id })).toBe(2);

      const deleted = await t.http().delete(\`/users/\${leaving.id}\`).set(...bearer(await t.token(adminId, [UsersScope.write])));
      expect(deleted.status).toBe(204);
      expect(await rows.countBy({ ownerId: leaving.id })).toBe(0);
      for (const path of paths) {
        const answer = await t.http().get(path).set(...bearer(adminToken));
        expectProblem(answer, 404, path);
        expect(answer.body.type).toBe('urn:problem-type:${n.singular}-not-found');
      }
      expect((await t.http().get(\`/${n.plural}/\${kept.id}\`).set(...bearer(reader))).body).toEqual(kept);
    });
  });
`;
